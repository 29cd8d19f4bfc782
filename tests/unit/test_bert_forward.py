"""The written-out BERT forward (models/bert_forward.py) against transformers' own forward
of the same model: the same patterns and hidden states, to the last bit."""

from __future__ import annotations

import pytest
import torch

from models.bert_forward import written_out_bert
from models.hf_models import AttentionModel
from models.pretrained import PretrainedEncoder

SENTENCE = "The animal didn't cross the street because it was too tired"
TEXTS = ("", "hi", SENTENCE, " ".join([SENTENCE] * 12))  # 2 tokens up to the 128 cap


@pytest.fixture(scope="module")
def minilm() -> PretrainedEncoder:
    return PretrainedEncoder()


@pytest.fixture(scope="module")
def tiny(tiny_models_dir) -> dict[str, AttentionModel]:
    kinds = ("bert", "roberta", "gpt2", "llama")
    return {kind: AttentionModel(tiny_models_dir / f"tiny-{kind}") for kind in kinds}


def _both(model: AttentionModel, input_ids: torch.Tensor, keep: torch.Tensor | None = None):
    assert model._written_out is not None
    with torch.inference_mode():
        patterns, states = model._written_out(input_ids, keep)
        theirs = model.transformers_forward(input_ids, keep)
    return patterns, states, theirs


def _assert_same(patterns, states, theirs, n_layers: int) -> None:
    assert len(patterns) == len(theirs.attentions) == n_layers
    assert len(states) == len(theirs.hidden_states) == n_layers + 1
    for ours, reference in zip(patterns, theirs.attentions, strict=True):
        assert torch.equal(ours, reference)
    for ours, reference in zip(states, theirs.hidden_states, strict=True):
        assert torch.equal(ours, reference)
    assert torch.equal(states[-1], theirs.last_hidden)


@pytest.mark.parametrize("text", TEXTS, ids=["empty", "one_word", "sentence", "capped"])
def test_minilm_patterns_and_hidden_states_equal_transformers(minilm, text):
    ids = torch.tensor([list(minilm.tokenize(text).ids)])
    patterns, states, theirs = _both(minilm, ids)
    _assert_same(patterns, states, theirs, minilm.cfg.n_layers)
    assert patterns[0].shape == (1, minilm.cfg.n_heads, ids.shape[1], ids.shape[1])


def test_minilm_with_heads_switched_off_equals_transformers(minilm):
    ids = torch.tensor([list(minilm.tokenize(SENTENCE).ids)]).expand(3, -1)
    keep = torch.ones(3, minilm.cfg.n_layers, minilm.cfg.n_heads)
    keep[1, 2, 5] = 0.0
    keep[2, 0, 0] = keep[2, 5, 11] = 0.0
    patterns, states, theirs = _both(minilm, ids, keep)
    _assert_same(patterns, states, theirs, minilm.cfg.n_layers)
    # A head switched off changes the hidden states from its own layer's output on, and
    # only in its own row of the batch.
    assert torch.equal(states[2][0], states[2][1])
    assert not torch.equal(states[3][0], states[3][1])
    assert not torch.equal(states[1][0], states[1][2])


def test_the_page_runs_the_written_out_pass_for_a_bert_folder(tiny):
    model = tiny["bert"]
    assert model._written_out is not None
    ids = torch.tensor([list(model.tokenize(SENTENCE).ids)])
    _assert_same(*_both(model, ids), model.cfg.n_layers)
    trace = model.run_with_cache(model.tokenize(SENTENCE))
    with torch.inference_mode():
        theirs = model.transformers_forward(ids)
    for layer, pattern in enumerate(theirs.attentions):
        assert (trace[f"blocks.{layer}.attn.hook_pattern"] == pattern[0].numpy()).all()


@pytest.mark.parametrize("kind", ["roberta", "gpt2", "llama"])
def test_other_architectures_keep_transformers_forward(tiny, kind):
    model = tiny[kind]
    assert model._written_out is None
    assert written_out_bert(model.model) is None


def test_a_bert_in_training_mode_is_not_written_out(tiny):
    bert = tiny["bert"].model
    bert.train()
    try:
        assert written_out_bert(bert) is None
    finally:
        bert.eval()
    assert written_out_bert(bert) is not None
