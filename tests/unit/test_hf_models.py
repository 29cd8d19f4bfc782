"""Hugging Face models loaded through the app's own code from a models folder: tiny random
BERT, RoBERTa, GPT-2, Llama (grouped-query attention) and Mistral, saved as safetensors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from models.nets.hf_models import ABLATABLE_EAGER, AttentionModel, NoAttentionWeights
from models.nets.pretrained import stack_patterns
from models.serving.catalog import Settings, list_models, model_folder
from models.serving.model_files import ModelRefused, check_folder, count_parameters

SENTENCE = "The animal didn't cross the street because it was too tired"
ENCODERS = ("bert", "roberta")
DECODERS = ("gpt2", "llama", "mistral")


@pytest.fixture(scope="module")
def settings(tiny_models_dir) -> Settings:
    return Settings(models_dir=tiny_models_dir, use_cache=False)


@pytest.fixture(scope="module")
def loaded(settings) -> dict[str, AttentionModel]:
    """Every tiny model, found in the catalogue and loaded as the page loads it."""
    choices = {c.name: c for c in list_models(settings)}
    return {
        kind: AttentionModel(model_folder(choices[f"tiny-{kind}"], settings), settings.max_params)
        for kind in (*ENCODERS, *DECODERS)
    }


def test_the_models_folder_named_in_the_environment_lists_every_tiny_model(
    tiny_models_dir, monkeypatch
):
    monkeypatch.setenv("SEQLENS_MODELS_DIR", str(tiny_models_dir))
    monkeypatch.setenv("SEQLENS_USE_HF_CACHE", "0")
    choices = list_models()
    assert choices[0].key == "all-MiniLM-L6-v2"
    keys = {c.key: c for c in choices}
    for kind in (*ENCODERS, *DECODERS):
        choice = keys[f"folder:tiny-{kind}"]
        assert choice.offered and choice.model_type == kind
        assert choice.n_params == count_parameters(tiny_models_dir / f"tiny-{kind}")


@pytest.mark.parametrize("kind", (*ENCODERS, *DECODERS))
def test_attention_has_one_row_per_query_head_and_rows_sum_to_one(loaded, kind):
    model = loaded[kind]
    tokenized = model.tokenize(SENTENCE)
    patterns = stack_patterns(model.run_with_cache(tokenized))
    n = len(tokenized.ids)
    assert patterns.shape == (model.cfg.n_layers, model.cfg.n_heads, n, n) == (2, 4, n, n)
    np.testing.assert_allclose(patterns.sum(-1), 1.0, atol=1e-5)
    assert model.model.config._attn_implementation == ABLATABLE_EAGER


@pytest.mark.parametrize("kind", DECODERS)
def test_decoders_cannot_attend_to_later_tokens(loaded, kind):
    model = loaded[kind]
    patterns = stack_patterns(model.run_with_cache(model.tokenize(SENTENCE)))
    assert model.cfg.causal
    future = np.triu(np.ones(patterns.shape[-2:], dtype=bool), k=1)
    assert np.all(patterns[..., future] == 0.0)
    assert np.all(patterns[..., 0, 0] == 1.0)  # the first token can only see itself


@pytest.mark.parametrize("kind", ENCODERS)
def test_encoders_attend_both_ways(loaded, kind):
    model = loaded[kind]
    patterns = stack_patterns(model.run_with_cache(model.tokenize(SENTENCE)))
    assert not model.cfg.causal
    future = np.triu(np.ones(patterns.shape[-2:], dtype=bool), k=1)
    assert patterns[..., future].sum() > 1.0


@pytest.mark.parametrize("kind", (*ENCODERS, *DECODERS))
def test_weights_and_outputs_equal_transformers_own_eager_attention(loaded, tiny_models_dir, kind):
    model = loaded[kind]
    model_class = AutoModelForCausalLM if model.cfg.causal else AutoModel
    reference = model_class.from_pretrained(
        tiny_models_dir / f"tiny-{kind}", attn_implementation="eager", use_safetensors=True
    ).eval()
    ids = model.tokenize(SENTENCE).ids
    # Logits of the last position only, as the app asks: a matrix product of another
    # shape would round differently.
    last_only = {"logits_to_keep": 1} if model.cfg.causal else {}
    with torch.inference_mode():
        expected = reference(input_ids=torch.tensor([ids]), output_attentions=True, **last_only)
    ours = model.forward(ids)
    for a, b in zip(ours.attentions, expected.attentions, strict=True):
        assert torch.equal(a, b)
    if model.cfg.causal:
        assert torch.equal(ours.next_logits, expected.logits[:, -1])
    else:
        assert torch.equal(ours.last_hidden, expected.last_hidden_state)


def test_llama_groups_two_query_heads_on_each_key_value_head(loaded):
    model = loaded["llama"]
    cfg = model.cfg
    assert (cfg.n_heads, cfg.n_kv_heads, cfg.group_size) == (4, 2, 2)
    assert [cfg.kv_head(h) for h in range(cfg.n_heads)] == [0, 0, 1, 1]
    assert [loaded["gpt2"].cfg.kv_head(h) for h in range(4)] == [0, 1, 2, 3]


def _llama_scores(model: AttentionModel, ids, kv_of) -> np.ndarray:
    """Layer 0's attention recomputed from its weights, each query head reading the
    key/value head `kv_of(h)`: softmax(q_h·k_kv(h)ᵀ/√d_head) under the causal mask."""
    core = model.model.model
    attn = core.layers[0].self_attn
    d_head, n = model.cfg.d_head, len(ids)
    with torch.inference_mode():
        x = core.layers[0].input_layernorm(core.embed_tokens(torch.tensor([ids])))
        q = attn.q_proj(x).view(1, n, -1, d_head).transpose(1, 2)
        k = attn.k_proj(x).view(1, n, -1, d_head).transpose(1, 2)
        cos, sin = core.rotary_emb(x, torch.arange(n)[None])
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
    q, k = q[0].double().numpy(), k[0].double().numpy()
    rows = []
    for h in range(model.cfg.n_heads):
        scores = q[h] @ k[kv_of(h)].T / np.sqrt(d_head)
        scores[np.triu(np.ones((n, n), dtype=bool), k=1)] = -np.inf
        e = np.exp(scores - scores.max(-1, keepdims=True))
        rows.append(e / e.sum(-1, keepdims=True))
    return np.stack(rows)


def test_each_query_heads_pattern_uses_the_key_value_head_the_mapping_names(loaded):
    model = loaded["llama"]
    ids = model.tokenize(SENTENCE).ids
    shown = model.run_with_cache(model.tokenize(SENTENCE))["blocks.0.attn.hook_pattern"]
    np.testing.assert_allclose(shown, _llama_scores(model, ids, model.cfg.kv_head), atol=1e-5)
    # Any other assignment of key/value heads gives other patterns.
    wrong = _llama_scores(model, ids, lambda h: h % model.cfg.n_kv_heads)
    assert np.abs(shown - wrong).max() > 1e-3


def test_parameters_counted_from_the_headers_match_the_loaded_model(loaded, tiny_models_dir):
    for kind, model in loaded.items():
        assert count_parameters(tiny_models_dir / f"tiny-{kind}") == model.n_params


# --- refusals -----------------------------------------------------------------------


def _copy_config(tiny_models_dir, tmp_path, name: str, **changes):
    folder = tmp_path / name
    folder.mkdir()
    config = json.loads((tiny_models_dir / "tiny-gpt2" / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_folder_with_only_a_pickle_checkpoint_is_refused(tiny_models_dir, tmp_path):
    folder = _copy_config(tiny_models_dir, tmp_path, "pickled")
    shutil.copy(tiny_models_dir / "tiny-gpt2" / "tokenizer.json", folder)
    (folder / "pytorch_model.bin").write_bytes(b"never read")
    with pytest.raises(ModelRefused) as refused:
        check_folder(folder, None)
    assert refused.value.code == "pickle_only"
    assert "pytorch_model.bin" in refused.value.params["files"]
    with pytest.raises(ModelRefused, match="pickle_only"):
        AttentionModel(folder)
    [choice] = list_models(Settings(models_dir=tmp_path, use_cache=False))[1:]
    assert choice.refused == "pickle_only" and not choice.offered
    with pytest.raises(ModelRefused, match="pickle_only"):
        model_folder(choice, Settings(models_dir=tmp_path))


def test_a_model_over_the_parameter_limit_is_refused_with_its_size(tiny_models_dir):
    n = count_parameters(tiny_models_dir / "tiny-llama")
    with pytest.raises(ModelRefused) as refused:
        AttentionModel(tiny_models_dir / "tiny-llama", max_params=n - 1)
    assert refused.value.code == "too_large"
    assert refused.value.params == {"n_params": n, "limit": n - 1}
    choices = list_models(Settings(models_dir=tiny_models_dir, use_cache=False, max_params=n - 1))
    assert {c.name: c.refused for c in choices}["tiny-llama"] == "too_large"
    assert AttentionModel(tiny_models_dir / "tiny-llama", max_params=n).n_params == n


def test_remote_code_and_unknown_architectures_are_refused(tiny_models_dir, tmp_path):
    remote = _copy_config(tiny_models_dir, tmp_path, "remote", auto_map={"AutoModel": "x.Y"})
    unknown = _copy_config(tiny_models_dir, tmp_path, "t5", model_type="t5")
    for folder in (remote, unknown):
        shutil.copy(tiny_models_dir / "tiny-gpt2" / "model.safetensors", folder)
    with pytest.raises(ModelRefused, match="remote_code"):
        check_folder(remote, None)
    with pytest.raises(ModelRefused) as refused:
        check_folder(unknown, None)
    assert refused.value.code == "unsupported" and refused.value.params == {"model_type": "t5"}


def test_a_model_that_returns_no_attention_weights_says_so(loaded, monkeypatch):
    model = loaded["gpt2"]

    class Silent:
        """Stands in for a model whose attention bypasses the weights (a fused kernel)."""

        def __call__(self, **kwargs):
            out = model_class_out(**kwargs)
            out.attentions = None
            return out

    model_class_out = model.model
    silent = AttentionModel.__new__(AttentionModel)
    silent.__dict__.update(model.__dict__, _model=Silent())
    with pytest.raises(NoAttentionWeights):
        silent.forward(model.tokenize(SENTENCE).ids)


# --- settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1.5B", 1_500_000_000), ("120M", 120_000_000), ("7_000", 7000), ("lots", 500_000_000),
     ("-3", 500_000_000), ("inf", 500_000_000), ("", 500_000_000)],
)  # fmt: skip
def test_the_parameter_limit_reads_plain_and_suffixed_counts(raw, expected):
    assert Settings.from_env({"SEQLENS_MAX_PARAMS": raw}).max_params == expected


def test_the_hub_is_off_unless_the_operator_switches_it_on(monkeypatch):
    import models.serving.catalog as catalog

    asked = []
    monkeypatch.setattr(catalog, "hub_online", lambda: asked.append(1) or True)
    off = Settings.from_env({"SEQLENS_HUB_MODELS": "openai-community/gpt2"})
    assert not off.allow_hub and catalog.hub_choices(off, set()) == [] and not asked
    on = Settings.from_env(
        {"SEQLENS_ALLOW_HUB": "1", "SEQLENS_HUB_MODELS": "openai-community/gpt2, ../etc, a b"}
    )
    assert on.hub_models == ("openai-community/gpt2",)
    [choice] = catalog.hub_choices(on, set())
    assert choice.key == "hub:openai-community/gpt2"
    # Already in the local cache: offered from there, not fetched again.
    assert catalog.hub_choices(on, {"openai-community/gpt2"}) == []
    with pytest.raises(ModelRefused, match="hub_off"):
        model_folder(choice, off)


def test_an_offline_hub_offers_nothing(monkeypatch):
    import models.serving.catalog as catalog

    monkeypatch.setattr(catalog, "hub_online", lambda: False)
    on = Settings.from_env({"SEQLENS_ALLOW_HUB": "1", "SEQLENS_HUB_MODELS": "org/model"})
    assert catalog.hub_choices(on, set()) == []


def test_the_attention_page_imports_its_models_module_without_transformers():
    """transformers (seconds to import on a fresh server) loads with the first model, so
    the attention page draws its frame and sentence box before it (models/nets/hf_models.py)."""
    code = (
        "import sys; "
        "import models.nets.pretrained, models.nets.hf_models, models.analysis.ablation; "
        "print('transformers' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_models_built_at_once_in_several_threads_all_find_transformers_whole():
    """Two visitors' first models on a fresh process: transformers is imported once, by one
    thread, while the others wait (without the lock, 1 run in 2 failed here)."""
    code = """
import threading
import models.nets.hf_models as hf
errors, start = [], threading.Barrier(8)
def build():
    start.wait()
    try:
        hf._transformers().AutoConfig
    except Exception as error:
        errors.append(repr(error))
threads = [threading.Thread(target=build) for _ in range(8)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
print(errors)
"""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_hub_libraries_are_told_to_stay_offline():
    import os

    import models.nets.hf_models  # noqa: F401

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["HF_HUB_DISABLE_TELEMETRY"] == "1"


# --- the Hugging Face cache and the hub ------------------------------------------------


def _cache_entry(cache, repo_id: str, source) -> None:
    """A model in the layout huggingface_hub writes: refs/main names a snapshot folder."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    revision = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    (repo / "blobs").mkdir()
    shutil.copytree(source, repo / "snapshots" / revision)


def test_models_already_in_the_local_cache_are_offered_without_a_download(
    tiny_models_dir, tmp_path
):
    _cache_entry(tmp_path, "someone/tiny-llama", tiny_models_dir / "tiny-llama")
    settings = Settings(cache_dir=tmp_path)
    [choice] = [c for c in list_models(settings) if c.source == "cache"]
    assert choice.key == "cache:someone/tiny-llama" and choice.offered
    model = AttentionModel(model_folder(choice, settings), settings.max_params)
    assert model.cfg.n_kv_heads == 2
    assert [c.source for c in list_models(Settings(cache_dir=tmp_path, use_cache=False))] == [
        "shipped"
    ]


def test_a_hub_model_is_checked_from_its_index_before_anything_is_downloaded(monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import NotASafetensorsRepoError

    import models.serving.catalog as catalog

    downloads = []

    class Meta:
        parameter_count = {"F32": 600_000_000}

    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", lambda repo: Meta())
    monkeypatch.setattr(
        huggingface_hub,
        "snapshot_download",
        lambda *a, **k: downloads.append((a, k)) or "/models/org/small",
    )
    with pytest.raises(ModelRefused) as refused:
        catalog.fetch_from_hub("org/big", 500_000_000)
    assert refused.value.code == "too_large" and downloads == []

    def no_safetensors(repo):
        raise NotASafetensorsRepoError("only pytorch_model.bin")

    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", no_safetensors)
    with pytest.raises(ModelRefused, match="pickle_only"):
        catalog.fetch_from_hub("org/old", 500_000_000)

    def offline(repo):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", offline)
    with pytest.raises(ModelRefused, match="hub_unreachable"):
        catalog.fetch_from_hub("org/any", 500_000_000)

    Meta.parameter_count = {"F32": 1000}
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", lambda repo: Meta())
    assert str(catalog.fetch_from_hub("org/small", 500_000_000)) == "/models/org/small"
    [(args, kwargs)] = downloads
    assert args == ("org/small",)
    assert not any(p.endswith((".bin", ".pt", ".pth", ".ckpt")) for p in kwargs["allow_patterns"])


def test_cased_and_sentencepiece_normalisers_report_no_accent_changes(loaded):
    from tokenizers import normalizers

    from models.nets.hf_models import accent_changes

    class WithNormaliser:
        def __init__(self, normalizer):
            self.backend_tokenizer = type("Backend", (), {"normalizer": normalizer})()

    sentencepiece = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    cased = normalizers.BertNormalizer(lowercase=False)
    for normalizer in (sentencepiece, cased, None):
        assert accent_changes("The café is Open", WithNormaliser(normalizer)) == []
    stripping = normalizers.BertNormalizer(lowercase=True)
    assert accent_changes("The café", WithNormaliser(stripping)) == [("café", "cafe")]
    assert accent_changes("The café", loaded["gpt2"].tokenizer) == []
