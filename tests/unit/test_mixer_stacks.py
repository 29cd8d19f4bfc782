"""The trainable mixer stacks: residual blocks around a selective SSM or linear attention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from models.nets.linear_attention import LinearAttentionLayer
from models.nets.mixer_stacks import MixerStack, StackConfig, layer_seed
from models.nets.selective_ssm import SelectiveSSM
from models.nets.task_models import ModelSpec, SequenceModel

CONFIGS = {
    "ssm": StackConfig(mixer="ssm", d_model=8, n_layers=2, d_state=4, expand=2, d_mlp=16),
    "linear": StackConfig(
        mixer="linear", d_model=8, n_layers=2, n_heads=2, d_mlp=16, positional="learned", n_ctx=9
    ),
}


def _X(*shape: int, seed: int = 0, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _stack(name: str, seed: int = 0) -> MixerStack:
    """A float64 copy of the stack, with every weight moved off its initial value (LayerNorm's
    ones and zeros, the SSM's D of ones), so that no term hides behind a 1 or a 0."""
    stack = MixerStack(CONFIGS[name], seed).double()
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for p in stack.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return stack


@pytest.mark.parametrize("name", list(CONFIGS))
def test_one_sequence_and_a_batch_come_out_in_their_own_shapes(name):
    stack = _stack(name)
    single, batch = _X(9, 8), _X(3, 9, 8, seed=1)
    assert stack(single).shape == (9, 8)
    out = stack(batch)
    assert out.shape == (3, 9, 8)
    for row in range(3):
        torch.testing.assert_close(out[row], stack(batch[row]), rtol=0, atol=1e-12)


def _layer_norm(x: torch.Tensor, norm: torch.nn.LayerNorm) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_stack_is_its_layers_composed_as_pre_norm_residual_blocks(name):
    """The stack's output, rebuilt here from its own layers' calls: each block adds its
    mixer's output and then its MLP's, each reading its own LayerNorm (written out) of the
    stream."""
    stack = _stack(name)
    X = _X(9, 8)
    x = X + stack.W_pos[:9] if CONFIGS[name].positional == "learned" else X
    for block in stack.blocks:
        normalized = _layer_norm(x, block.ln1)
        x = x + block.mixer(normalized)
        hidden = _layer_norm(x, block.ln2) @ block.mlp.W_in + block.mlp.b_in
        x = x + F.gelu(hidden) @ block.mlp.W_out + block.mlp.b_out
    expected = _layer_norm(x, stack.ln_final)
    torch.testing.assert_close(stack(X), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_blocks_mixers_are_the_lessons_layers(name):
    stack = _stack(name)
    kind = SelectiveSSM if CONFIGS[name].mixer == "ssm" else LinearAttentionLayer
    assert all(type(block.mixer) is kind for block in stack.blocks)
    # every layer has a seed of its own
    seeds = [block.mixer.seed for block in stack.blocks]
    assert seeds == [layer_seed(0, 0), layer_seed(0, 1)] and seeds[0] != seeds[1]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_output_depends_on_a_later_input(name):
    """Causal: changing every input from position t on leaves the outputs before t exactly
    as they were, and the gradient of an early output with respect to later inputs is 0."""
    stack = _stack(name)
    X = _X(9, 8)
    for t in (1, 4, 8):
        changed = X.clone()
        changed[t:] += _X(9 - t, 8, seed=t)
        assert torch.equal(stack(changed)[:t], stack(X)[:t])
    leaf = X.clone().requires_grad_(True)
    stack(leaf)[:5].sum().backward()
    assert torch.equal(leaf.grad[5:], torch.zeros_like(leaf.grad[5:]))
    assert leaf.grad[:5].abs().sum() > 0


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_recurrent_form_gives_the_parallel_forms_numbers(name):
    stack = _stack(name)
    X = _X(2, 9, 8)
    torch.testing.assert_close(stack(X, recurrent=True), stack(X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_trainable_stack_learns_and_every_weight_gets_a_gradient(name):
    """A few Adam steps fit a fixed target better; every parameter has a gradient."""
    stack = MixerStack(CONFIGS[name], seed=1, requires_grad=True)
    X, target = _X(4, 9, 8, dtype=torch.float32), _X(4, 9, 8, seed=2, dtype=torch.float32)
    optimizer = torch.optim.Adam(stack.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = F.mse_loss(stack(X), target)
        optimizer.zero_grad()
        loss.backward()
        if not losses:
            for param_name, p in stack.named_parameters():
                assert p.grad is not None and p.grad.abs().sum() > 0, param_name
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_freeze_makes_a_trained_stack_read_only(name):
    stack = MixerStack(CONFIGS[name], seed=1, requires_grad=True)
    assert all(p.requires_grad for p in stack.parameters()) and stack.training
    assert stack.freeze() is stack
    assert not any(p.requires_grad for p in stack.parameters()) and not stack.training
    out = stack(_X(9, 8, dtype=torch.float32))
    assert out.grad_fn is None and not out.requires_grad


def test_a_stack_is_built_from_its_config_and_seed():
    first, again, other = (MixerStack(CONFIGS["ssm"], s).state_dict() for s in (3, 3, 4))
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(first["blocks.0.mixer.W_in"], other["blocks.0.mixer.W_in"])


def test_a_learned_table_refuses_a_longer_sequence():
    with pytest.raises(ValueError, match="rows"):
        _stack("linear")(_X(10, 8))


@pytest.mark.parametrize(
    "settings",
    [
        {"mixer": "lstm"},
        {"mixer": "linear", "d_model": 10, "n_heads": 4},
        {"mixer": "ssm", "positional": "rope"},
        {"mixer": "ssm", "d_state": 0},
    ],
)
def test_settings_that_make_no_stack_are_refused(settings):
    with pytest.raises(ValueError):
        StackConfig(**settings)


@pytest.mark.parametrize("kind", ["ssm", "linear"])
def test_a_sequence_model_of_a_mixer_kind_reads_tokens_through_its_stack(kind):
    """Embedding, stack, readout: the model's output is W_U applied to its stack's output on
    the embedded tokens."""
    spec = ModelSpec(kind=kind, n_in=7, n_out=5, d_model=8, n_heads=2, n_ctx=6, positional="none")
    model = SequenceModel(spec, seed=2).freeze()
    assert isinstance(model.core, MixerStack) and model.core.cfg.mixer == kind
    tokens = torch.randint(7, (3, 6), generator=torch.Generator().manual_seed(0))
    expected = model.core(model.W_in[tokens]) @ model.W_U + model.b_U
    assert torch.equal(model(tokens), expected)
    assert model.predict(tokens).shape == (3, 6, 5)
