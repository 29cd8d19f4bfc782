"""The trained selective stack read piece by piece (models/analysis/trained_selective.py),
held to the stack's own forward pass and to the layer's formulas written out here."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from models.analysis import trained_selective as tsel
from models.nets.task_models import ModelSpec, SequenceModel
from models.training import checkpoints
from models.training.tasks import make_task
from models.training.train import CHECKPOINT_DIR, SELECTIVE_COPY, checkpoint_name

TASK = make_task("selective_copy", **dict(SELECTIVE_COPY))


def _stack(positional: str, seed: int = 3) -> SequenceModel:
    """A small random stack of kind "ssm" in float64 (weights moved off their start, so the
    norms' weights and biases and D are not the identity they are built as)."""
    spec = ModelSpec(
        kind="ssm", n_in=TASK.n_in, n_out=TASK.n_out, d_model=8, n_ctx=TASK.n_ctx,
        positional=positional,
    )  # fmt: skip
    model = SequenceModel(spec, seed).double().freeze()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            parameter.add_(0.1 * noise)
    return model


def _ids(size: int = 3) -> torch.Tensor:
    return TASK.held_out(size).inputs


def _layer_norm(x: np.ndarray, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight.numpy() + bias.numpy()


def _first_input(model: SequenceModel, ids: torch.Tensor) -> np.ndarray:
    """ln1(W_in[ids] (+ W_pos)), written out in numpy."""
    x = model.W_in.numpy()[ids.numpy()]
    if hasattr(model.core, "W_pos"):
        x = x + model.core.W_pos.numpy()[: ids.shape[-1]]
    ln = model.core.blocks[0].ln1
    return _layer_norm(x, ln.weight, ln.bias, ln.eps)


@pytest.mark.parametrize("positional", ["none", "learned"])
def test_pieces_compose_to_the_stacks_own_forward(positional):
    model = _stack(positional)
    ids = _ids()
    reading = tsel.first_layer_reading(model, ids)
    with torch.no_grad():
        expected = model(ids).numpy()
    assert reading["logits"].dtype == np.float64
    np.testing.assert_allclose(reading["logits"], expected, rtol=1e-12, atol=1e-12)
    # The same composition by hand, block by block, from the pieces.
    with torch.no_grad():
        x = tsel.stack_input(model, ids)
        for block in model.core.blocks:
            pieces = tsel.block_pieces(block, x)
            assert torch.equal(pieces["resid_mid"], x + pieces["mixed"])
            x = pieces["resid_post"]
        np.testing.assert_allclose(tsel.readout(model, x).numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("positional", ["none", "learned"])
def test_layer_input_is_the_first_norm_of_the_embedded_tokens(positional):
    model = _stack(positional)
    ids = _ids()
    reading = tsel.first_layer_reading(model, ids)
    np.testing.assert_allclose(
        reading["layer_input"], _first_input(model, ids), rtol=1e-10, atol=1e-12
    )


def test_delta_and_kept_fraction_are_the_layers_formulas_on_that_input():
    model = _stack("none")
    ids = _ids()
    reading = tsel.first_layer_reading(model, ids)
    ssm = model.core.blocks[0].mixer
    u = _first_input(model, ids) @ ssm.W_in.numpy()
    z = u @ ssm.W_delta.numpy() + ssm.b_delta.numpy()
    delta = np.log1p(np.exp(-np.abs(z))) + np.maximum(z, 0.0)  # softplus, without overflow
    A = -np.exp(ssm.A_log.numpy())
    kept = np.exp(delta[..., None] * A).mean(axis=-1)
    # The layer's trace is float32 (SelectiveSSM.run_with_cache): one float32 rounding away.
    assert reading["ssm_delta"].shape == (3, TASK.n_ctx, ssm.cfg.d_inner)
    np.testing.assert_allclose(reading["ssm_delta"], delta, rtol=1e-6)
    np.testing.assert_allclose(reading["ssm_decay"], kept, rtol=1e-6)
    np.testing.assert_allclose(reading["ssm_u"], u, rtol=1e-5, atol=1e-6)


def test_the_mixers_own_trace_is_the_mixed_piece():
    model = _stack("none")
    ids = _ids()
    reading = tsel.first_layer_reading(model, ids)
    with torch.no_grad():
        mixed = tsel.block_pieces(model.core.blocks[0], tsel.stack_input(model, ids))["mixed"]
    np.testing.assert_allclose(reading["ssm_out"], mixed.numpy(), rtol=1e-5, atol=1e-6)


def test_one_sequence_reads_as_the_same_row_of_a_batch():
    model = _stack("learned")
    ids = _ids()
    batch = tsel.first_layer_reading(model, ids)
    one = tsel.first_layer_reading(model, ids[1])
    for name in ("ssm_delta", "ssm_decay", "logits", "layer_input"):
        np.testing.assert_allclose(one[name], batch[name][1], rtol=1e-6, atol=1e-9)


def test_the_shared_model_is_left_as_it_was():
    model = _stack("none")
    before = copy.deepcopy(model.state_dict())
    tsel.first_layer_reading(model, _ids())
    after = model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert not any(p.requires_grad for p in model.parameters())


def test_only_a_state_space_stack_is_read():
    spec = ModelSpec(kind="linear", n_in=TASK.n_in, n_out=TASK.n_out, d_model=8, n_ctx=36)
    with pytest.raises(ValueError, match="ssm"):
        tsel.first_layer_reading(SequenceModel(spec).freeze(), _ids())


def test_positions_are_symbols_blanks_and_recall_markers_as_the_task_makes_them():
    batch = TASK.held_out(4)
    kinds = tsel.position_kinds(batch.inputs.numpy(), TASK.n_symbols)
    for row, targets, row_kinds in zip(batch.inputs, batch.targets, kinds, strict=True):
        symbols = [i for i in range(TASK.length) if TASK.vocab[int(row[i])] not in ("·", "?")]
        assert [i for i, k in enumerate(row_kinds) if k == tsel.SYMBOL] == symbols
        assert len(symbols) == TASK.n_copy
        assert [i for i, k in enumerate(row_kinds) if k == tsel.RECALL] == list(
            range(TASK.length, TASK.n_ctx)
        )
        assert list(tsel.answer_slots(targets.numpy())) == list(range(TASK.length, TASK.n_ctx))
        assert [TASK.vocab[int(row[i])] for i in symbols] == [
            TASK.vocab[int(w)] for w in targets[TASK.length :]
        ]


def test_means_by_kind_and_softmax_against_loops_and_torch(rng):
    values = rng.normal(size=(2, 5))
    kinds = np.array([["symbol", "blank", "blank", "recall", "blank"]] * 2, dtype=object)
    means = tsel.means_by_kind(values, kinds)
    for kind in tsel.KINDS:
        picked = [values[i, j] for i in range(2) for j in range(5) if kinds[i, j] == kind]
        assert means[kind] == pytest.approx(sum(picked) / len(picked))
    assert np.isnan(tsel.means_by_kind(values[:, 1:3], kinds[:, 1:3])[tsel.SYMBOL])
    logits = rng.normal(size=(3, 10)) * 20
    expected = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
    np.testing.assert_allclose(tsel.softmax(logits), expected, rtol=1e-12)


def test_the_shipped_stack_reads_its_held_out_sequences_as_its_forward_pass_predicts():
    stem = CHECKPOINT_DIR / checkpoint_name(TASK, "ssm")
    model = checkpoints.load(stem).model
    batch = TASK.held_out(16)
    reading = tsel.first_layer_reading(model, batch.inputs)
    expected = model.predict(batch.inputs).numpy()
    np.testing.assert_allclose(reading["logits"], expected, rtol=1e-5, atol=1e-5)
    slots = tsel.answer_slots(batch.targets[0].numpy())
    assert (reading["logits"][:, slots].argmax(-1) == expected[:, slots].argmax(-1)).all()
