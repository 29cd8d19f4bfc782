"""The attention page when the operator's models folder holds a damaged model beside a good
one: the page still draws, the damaged folder is named with its reason, and a model that
fails on a sentence says so in the visitor's language."""

from __future__ import annotations

import shutil
import struct

import pytest
from conftest import chart, messages, open_lesson, texts

import models.nets.hf_models as hf_models
from models.nets.tiny import save_tiny_model

SENTENCE = "the dog sat on the mat"
SHAPE_NOT_A_NUMBER = b'{"w": {"dtype": "F32", "shape": ["x"], "data_offsets": [0, 4]}}'


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    save_tiny_model("gpt2", root / "tiny-gpt2")
    broken = root / "broken"
    broken.mkdir()
    shutil.copy(root / "tiny-gpt2" / "config.json", broken)
    header = SHAPE_NOT_A_NUMBER
    (broken / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    return root


@pytest.fixture(autouse=True)
def operator_folder(operator_models_folder):
    """The server's operator points SEQLENS_MODELS_DIR at this module's folder."""


def test_a_damaged_folder_beside_a_good_one_leaves_minilm_drawn():
    at = open_lesson("heads", SENTENCE)
    assert not at.exception, [e.value for e in at.exception]
    offered = [option.split(" · ")[0] for option in at.selectbox(key="model").options]
    assert offered[:2] == ["all-MiniLM-L6-v2", "tiny-gpt2"] and "broken" not in offered
    assert chart(at, "one_head")
    assert any(
        text.startswith("broken: model.safetensors is not a valid safetensors file")
        for text in texts(at)
    )


def test_the_damaged_folders_reason_is_given_in_chinese():
    at = open_lesson("heads", SENTENCE, lang="zh")
    assert not at.exception, [e.value for e in at.exception]
    assert any(text.startswith("broken: model.safetensors 不是有效的") for text in texts(at))


def test_a_model_that_fails_on_the_sentence_says_so_instead_of_a_traceback(monkeypatch):
    def fails(self, *args, **kwargs):
        raise IndexError("index out of range in self")

    monkeypatch.setattr(hf_models.AttentionModel, "forward", fails)
    at = open_lesson("heads", "the cat ran", model="folder:tiny-gpt2")
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.startswith("This model failed while reading your sentence") for m in messages(at))
