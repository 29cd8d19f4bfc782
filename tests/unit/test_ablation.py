"""Switching heads off: nothing switched off changes nothing, and one head switched off
matches an independent computation on a copy of the model with that head's slice of W_O
zeroed (the same as zeroing its output z before W_O)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from models.analysis.ablation import ablate, every_head_effect, sentence_embedding
from models.nets.hf_models import AttentionModel
from models.nets.pretrained import PretrainedEncoder

SENTENCE = "The animal didn't cross the street because it was too tired"


@pytest.fixture(scope="module")
def models(tiny_models_dir) -> dict[str, AttentionModel]:
    kinds = ("bert", "gpt2", "llama")
    return {kind: AttentionModel(tiny_models_dir / f"tiny-{kind}") for kind in kinds}


def _w_o_without_head(model: AttentionModel, layer: int, head: int):
    """A deep copy of the transformers model with `head`'s columns of W_O set to zero."""
    clone = copy.deepcopy(model.model)
    d = model.cfg.d_head
    cols = slice(head * d, (head + 1) * d)
    with torch.no_grad():
        if model.cfg.model_type == "gpt2":
            clone.transformer.h[layer].attn.c_proj.weight[cols, :] = 0.0  # Conv1D: [in, out]
        elif model.cfg.model_type == "bert":
            clone.encoder.layer[layer].attention.output.dense.weight[:, cols] = 0.0
        else:
            clone.model.layers[layer].self_attn.o_proj.weight[:, cols] = 0.0
    return clone


def _output(model: AttentionModel, hf_model, ids) -> torch.Tensor:
    with torch.inference_mode():
        out = hf_model(input_ids=torch.tensor([ids]))
    return out.logits[0, -1] if model.cfg.causal else out.last_hidden_state[0]


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_switching_no_head_off_reproduces_the_output_exactly(models, kind):
    model = models[kind]
    ids = model.tokenize(SENTENCE).ids
    plain = model.forward(ids)
    kept = model.forward(ids, keep=model.head_keep([]))
    for a, b in zip(plain.attentions, kept.attentions, strict=True):
        assert torch.equal(a, b)
    change = ablate(model, model.tokenize(SENTENCE), [])
    if model.cfg.causal:
        assert torch.equal(plain.next_logits, kept.next_logits)
        assert np.array_equal(change.before, change.after) and change.kl == 0.0
    else:
        assert torch.equal(plain.last_hidden, kept.last_hidden)
        assert change.cosine == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(change.token_cosine, 1.0, atol=1e-12)


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
@pytest.mark.parametrize(("layer", "head"), [(0, 1), (1, 3)])
def test_one_head_off_matches_zeroing_its_slice_of_w_o(models, kind, layer, head):
    model = models[kind]
    ids = model.tokenize(SENTENCE).ids
    ours = model.forward(ids, keep=model.head_keep([(layer, head)]))
    ours = ours.next_logits[0] if model.cfg.causal else ours.last_hidden[0]
    expected = _output(model, _w_o_without_head(model, layer, head), ids)
    original = _output(model, model.model, ids)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)
    assert (ours - original).abs().max() > 1e-3  # it did change something


def test_one_decoder_head_off_moves_the_next_token_distribution(models):
    change = ablate(models["gpt2"], models["gpt2"].tokenize(SENTENCE), [(1, 0)])
    assert change.kl > 1e-6
    assert not np.allclose(change.before, change.after)
    assert change.before[0] == change.before.max()  # shown most likely first
    assert len(change.token_ids) >= 8


def test_every_head_in_one_batched_pass_matches_each_head_alone(models):
    for kind in ("bert", "llama"):
        model = models[kind]
        tokenized = model.tokenize(SENTENCE)
        effects = every_head_effect(model, tokenized, batch=3)
        assert effects.shape == (2, 4)
        for layer, head in [(0, 0), (1, 2), (1, 3)]:
            alone = ablate(model, tokenized, [(layer, head)])
            measure = alone.kl if model.cfg.causal else 1.0 - alone.cosine
            assert effects[layer, head] == pytest.approx(measure, rel=1e-3, abs=1e-9)


def test_ablation_leaves_the_shared_model_as_it_was(models):
    model = models["llama"]
    before = {k: v.clone() for k, v in model.model.state_dict().items()}
    config = model.model.config.to_dict()

    def hooks():
        return [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.model.modules()]

    model.forward(model.tokenize(SENTENCE).ids)  # transformers adds its own capture hooks once
    hooks_before = hooks()
    every_head_effect(model, model.tokenize(SENTENCE))
    ablate(model, model.tokenize(SENTENCE), [(0, 0), (1, 1)])
    assert all(torch.equal(before[k], v) for k, v in model.model.state_dict().items())
    assert model.model.config.to_dict() == config
    assert hooks() == hooks_before
    # And an ordinary pass afterwards is the original one.
    ids = model.tokenize(SENTENCE).ids
    assert torch.equal(model.forward(ids).next_logits, model.forward(ids).next_logits)


@pytest.fixture(scope="module")
def minilm() -> PretrainedEncoder:
    return PretrainedEncoder()


def test_minilm_sentence_embedding_is_unchanged_with_no_head_off_and_moves_with_one(minilm):
    tokenized = minilm.tokenize(SENTENCE)
    assert ablate(minilm, tokenized, []).cosine == pytest.approx(1.0, abs=1e-12)
    one = ablate(minilm, tokenized, [(3, 1)])
    assert one.cosine < 1.0 - 1e-6
    ids = tokenized.ids
    expected = sentence_embedding(_output(minilm, _w_o_without_head(minilm, 3, 1), ids)[None])
    ours = sentence_embedding(minilm.forward(ids, keep=minilm.head_keep([(3, 1)])).last_hidden)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)
