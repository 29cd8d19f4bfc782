"""The model catalogue survives any file: damaged operator folders are listed as refused
with a reason, and a config.json is held to the weights it sits beside."""

from __future__ import annotations

import json
import logging
import shutil
import struct
from pathlib import Path

import pytest

import models.nets.hf_models as hf_models
from models.nets.hf_models import AttentionModel
from models.nets.pretrained import default_model_path
from models.nets.tiny import KINDS
from models.serving.catalog import Settings, list_models
from models.serving.config_size import config_parameters
from models.serving.model_files import ModelRefused, check_folder, count_parameters

LANGUAGES = ("en", "zh")
DECODERS = ("gpt2", "llama", "mistral")


def _messages(language: str) -> dict:
    root = Path(__file__).resolve().parents[2] / "assets" / "i18n" / language
    return json.loads((root / "heads.json").read_text(encoding="utf-8"))


def _safetensors(header_text: str, data: bytes = b"") -> bytes:
    raw = header_text.encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _folder_beside(tiny_models_dir, root, name: str, weights: bytes | None = None):
    """A copy of tiny-gpt2's config and tokenizer, with `weights` as its safetensors."""
    folder = root / name
    folder.mkdir()
    for file in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_models_dir / "tiny-gpt2" / file, folder)
    if weights is not None:
        (folder / "model.safetensors").write_bytes(weights)
    return folder


DEEP = "[" * 200_000 + "]" * 200_000
DAMAGED_WEIGHTS = {
    "shape_not_numbers": '{"w": {"dtype": "F32", "shape": ["x"], "data_offsets": [0, 4]}}',
    "shape_negative": '{"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 4]}}',
    "shape_not_a_list": '{"w": {"dtype": "F32", "shape": 7, "data_offsets": [0, 4]}}',
    "dtype_unknown": '{"w": {"dtype": "Q9", "shape": [1], "data_offsets": [0, 4]}}',
    "entry_not_a_dict": '{"w": [1, 2, 3]}',
    "entry_a_number": '{"w": 5}',
    "header_a_list": "[1, 2]",
    "deep_nesting": '{"w": ' + DEEP + "}",
    "offsets_past_the_end": '{"w": {"dtype": "F32", "shape": [1000], "data_offsets": [0, 4000]}}',
}


@pytest.fixture
def damaged_root(tiny_models_dir, tmp_path):
    root = tmp_path / "models"
    root.mkdir()
    shutil.copytree(tiny_models_dir / "tiny-gpt2", root / "good-gpt2")
    for name, header in DAMAGED_WEIGHTS.items():
        _folder_beside(tiny_models_dir, root, name, _safetensors(header, b"\0" * 4))
    garbage = bytes(range(256)) * 64
    _folder_beside(tiny_models_dir, root, "weights_garbage", garbage)
    _folder_beside(tiny_models_dir, root, "weights_small_garbage", struct.pack("<Q", 64) + garbage)
    listed = _folder_beside(tiny_models_dir, root, "config_a_list", b"")
    shutil.copy(tiny_models_dir / "tiny-gpt2" / "model.safetensors", listed)
    (listed / "config.json").write_text("[1, 2, 3]")
    deep = _folder_beside(tiny_models_dir, root, "config_deep", b"")
    shutil.copy(tiny_models_dir / "tiny-gpt2" / "model.safetensors", deep)
    (deep / "config.json").write_text('{"model_type": "gpt2", "x": ' + DEEP + "}")
    binary = _folder_beside(tiny_models_dir, root, "config_binary", b"")
    shutil.copy(tiny_models_dir / "tiny-gpt2" / "model.safetensors", binary)
    (binary / "config.json").write_bytes(garbage)
    return root


def test_every_damaged_folder_is_listed_as_refused_with_a_reason_and_the_good_one_offered(
    damaged_root,
):
    choices = {c.name: c for c in list_models(Settings(models_dir=damaged_root, use_cache=False))}
    assert choices["all-MiniLM-L6-v2"].offered
    assert choices["good-gpt2"].offered and choices["good-gpt2"].model_type == "gpt2"
    damaged = [name for name in choices if name not in ("all-MiniLM-L6-v2", "good-gpt2")]
    assert len(damaged) == len(DAMAGED_WEIGHTS) + 5
    for name in damaged:
        assert not choices[name].offered, name
        for language in LANGUAGES:
            assert f"heads.refused.{choices[name].refused}" in _messages(language), name
    assert {choices[name].refused for name in DAMAGED_WEIGHTS} == {"bad_weights"}
    assert choices["config_a_list"].refused == "bad_config"
    assert choices["config_deep"].refused == "bad_config"


def test_an_unforeseen_error_reading_a_folder_refuses_that_folder_alone_and_is_logged(
    tiny_models_dir, monkeypatch, caplog
):
    import models.serving.catalog as catalog

    real = catalog.check_folder

    def breaks_on_llama(folder, max_params):
        if folder.name == "tiny-llama":
            raise KeyError("a case nobody foresaw")
        return real(folder, max_params)

    monkeypatch.setattr(catalog, "check_folder", breaks_on_llama)
    with caplog.at_level(logging.WARNING, logger="models.serving.catalog"):
        choices = {
            c.name: c for c in list_models(Settings(models_dir=tiny_models_dir, use_cache=False))
        }
    assert choices["tiny-llama"].refused == "damaged"
    assert choices["tiny-llama"].refused_params == {"error": "KeyError"}
    assert all(choices[f"tiny-{kind}"].offered for kind in KINDS if kind != "llama")
    logged = [r for r in caplog.records if "tiny-llama" in r.getMessage()]
    assert logged and logged[0].exc_info is not None


# --- the size a config claims ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_configs_parameter_estimate_matches_the_weights_header(tiny_models_dir, kind):
    folder = tiny_models_dir / f"tiny-{kind}"
    config = json.loads((folder / "config.json").read_text())
    assert config_parameters(config) == count_parameters(folder)


def test_the_configs_parameter_estimate_matches_the_shipped_minilm():
    folder = default_model_path()
    config = json.loads((folder / "config.json").read_text())
    # The header also counts the stored position_ids buffer, one number per position.
    assert count_parameters(folder) - config_parameters(config) == 512
    assert config["max_position_embeddings"] == 512


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "bert"},  # bert-base's sizes, from transformers' defaults
        {"model_type": "roberta", "max_position_embeddings": 514, "type_vocab_size": 1},
        {"model_type": "gpt2", "n_embd": 1024, "n_layer": 3, "n_head": 16, "n_inner": 3000},
        {"model_type": "gpt2", "hidden_size": 256, "num_hidden_layers": 2,
         "num_attention_heads": 8},  # the common names transformers maps to GPT-2's
        {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
         "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256, "tie_word_embeddings": True},
        {"model_type": "llama", "num_hidden_layers": 1, "attention_bias": True,
         "mlp_bias": True, "head_dim": 64},
        {"model_type": "mistral", "num_hidden_layers": 1},
    ],
)  # fmt: skip
def test_the_configs_parameter_estimate_matches_the_model_transformers_builds(config):
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    built_config = AutoConfig.for_model(**config)
    model_class = AutoModelForCausalLM if config["model_type"] in DECODERS else AutoModel
    with torch.device("meta"):  # shapes only: nothing is allocated
        model = model_class.from_config(built_config)
    assert config_parameters(config) == sum(p.numel() for p in model.parameters())


def _config_beside_tiny_weights(tiny_models_dir, tmp_path, **changes):
    folder = _folder_beside(tiny_models_dir, tmp_path, "claims", None)
    shutil.copy(tiny_models_dir / "tiny-gpt2" / "model.safetensors", folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    ("n_layer", "code"), [(10_000, "bad_config_value"), (200, "config_mismatch")]
)
def test_a_config_claiming_far_more_layers_than_its_weights_is_refused_before_anything_is_built(
    tiny_models_dir, tmp_path, monkeypatch, n_layer, code
):
    folder = _config_beside_tiny_weights(tiny_models_dir, tmp_path, n_layer=n_layer)
    built = []
    monkeypatch.setattr(hf_models, "_transformers", lambda *a, **k: built.append(1))
    with pytest.raises(ModelRefused) as refused:
        check_folder(folder, None)
    assert refused.value.code == code
    with pytest.raises(ModelRefused, match=code):
        AttentionModel(folder)
    assert built == []
    [choice] = list_models(Settings(models_dir=tmp_path, use_cache=False))[1:]
    assert choice.refused == code and not choice.offered


def test_a_config_that_does_not_describe_its_weights_says_both_counts(tiny_models_dir, tmp_path):
    folder = _config_beside_tiny_weights(tiny_models_dir, tmp_path, n_layer=200)
    with pytest.raises(ModelRefused) as refused:
        check_folder(folder, None)
    assert refused.value.params["n_params"] == count_parameters(folder)
    assert refused.value.params["config_params"] > 50 * count_parameters(folder)


def test_a_config_over_the_limit_is_refused_by_its_own_estimate(tiny_models_dir, tmp_path):
    folder = _config_beside_tiny_weights(tiny_models_dir, tmp_path, n_layer=3)
    estimate = config_parameters(json.loads((folder / "config.json").read_text()))
    assert count_parameters(folder) < estimate
    with pytest.raises(ModelRefused) as refused:
        check_folder(folder, estimate - 1)
    assert refused.value.code == "too_large" and refused.value.params["n_params"] == estimate


@pytest.mark.parametrize(
    "changes",
    [{"n_layer": 2.5}, {"n_layer": "2"}, {"n_layer": 0}, {"n_embd": -32}, {"n_head": True},
     {"n_layer": 10**12}, {"n_embd": 32.0}, {"n_head": 5}],
)  # fmt: skip
def test_config_sizes_that_are_not_sane_whole_numbers_are_refused(
    tiny_models_dir, tmp_path, changes
):
    folder = _config_beside_tiny_weights(tiny_models_dir, tmp_path, **changes)
    with pytest.raises(ModelRefused) as refused:
        check_folder(folder, None)
    assert refused.value.code == "bad_config_value"
    assert refused.value.params["key"] in changes
    for language in LANGUAGES:
        assert "heads.refused.bad_config_value" in _messages(language)
