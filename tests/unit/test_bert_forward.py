"""The written-out BERT forward (models/nets/bert_forward.py) against transformers' own forward
of the same model: the same patterns and hidden states, to the last bit."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from models.nets.bert_forward import WEIGHTS_FILE, bert_from_folder, written_out_bert
from models.nets.hf_models import AttentionModel
from models.nets.pretrained import PretrainedEncoder

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


def test_the_pass_on_transformers_loaded_weights_equals_the_pass_from_the_file(minilm):
    from_model = written_out_bert(minilm.model)
    assert from_model is not None and from_model is not minilm._written_out
    assert (
        from_model.n_params == minilm.n_params == sum(p.numel() for p in minilm.model.parameters())
    )
    ids = torch.tensor([list(minilm.tokenize(SENTENCE).ids)])
    with torch.inference_mode():
        ours, theirs = from_model(ids), minilm._written_out(ids)
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1], strict=True):
        assert torch.equal(a, b)


def test_the_shipped_model_loads_and_runs_without_transformers_model_classes():
    """What a cold server's first chart waits for: no BERT modeling file, no torch._dynamo."""
    code = (
        "import sys\n"
        "from models.nets.pretrained import PretrainedEncoder\n"
        "m = PretrainedEncoder()\n"
        "m.run_with_cache(m.tokenize('The cat sat on the mat'))\n"
        "print(sorted(n for n in sys.modules if n.startswith('transformers.models.')"
        " or n.startswith('torch._dynamo')))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    loaded = out.stdout.strip().splitlines()[-1]
    assert "modeling_bert" not in loaded and "torch._dynamo" not in loaded, loaded


def _copy_bert(tiny_models_dir, tmp_path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(tiny_models_dir / "tiny-bert", folder)
    return folder


def test_bert_weights_saved_under_other_names_load_through_transformers(tiny_models_dir, tmp_path):
    folder = _copy_bert(tiny_models_dir, tmp_path, "prefixed")
    weights = load_file(folder / WEIGHTS_FILE)
    save_file({f"bert.{name}": t for name, t in weights.items()}, folder / WEIGHTS_FILE)
    model = AttentionModel(folder)
    assert model._model is not None  # built by transformers, which knows the prefix
    assert model._written_out is not None  # and then run written out on its weights
    ids = torch.tensor([list(model.tokenize(SENTENCE).ids)])
    _assert_same(*_both(model, ids), model.cfg.n_layers)


def test_a_bert_with_another_activation_keeps_transformers_forward(tiny_models_dir, tmp_path):
    folder = _copy_bert(tiny_models_dir, tmp_path, "tanh_gelu")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"hidden_act": "gelu_new"}))
    model = AttentionModel(folder)
    assert model._written_out is None
    assert bert_from_folder(folder, model.model.config) is None
    assert model.forward(model.tokenize(SENTENCE).ids).attentions[0].shape[1] == model.cfg.n_heads


def test_a_bert_in_training_mode_is_not_written_out(tiny):
    bert = tiny["bert"].model
    bert.train()
    try:
        assert written_out_bert(bert) is None
    finally:
        bert.eval()
    assert written_out_bert(bert) is not None
