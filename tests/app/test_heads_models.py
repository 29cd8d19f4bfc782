"""The attention page with models from the operator's models folder: tiny random GPT-2,
Llama (grouped-query attention) and BERT models saved as safetensors, chosen from the list."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import chart, grid_columns, grid_values, messages, open_lesson, texts

from components.ui.runs.heads import model_choices
from models.nets.tiny import save_tiny_model

SENTENCE = "the cat sat on the mat"


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    for kind in ("gpt2", "llama", "bert"):
        save_tiny_model(kind, root / f"tiny-{kind}")
    pickled = root / "pickled"
    pickled.mkdir()
    shutil.copy(root / "tiny-gpt2" / "config.json", pickled)
    (pickled / "pytorch_model.bin").write_bytes(b"never read")
    return root


@pytest.fixture(autouse=True)
def operator_folder(operator_models_folder):
    """The server's operator points SEQLENS_MODELS_DIR at this module's folder."""


def test_the_model_list_offers_the_folder_models_after_minilm(models_dir):
    at = open_lesson("heads", SENTENCE)
    box = at.selectbox(key="model")
    assert box.options[0].startswith("all-MiniLM-L6-v2")
    offered = [option.split(" · ")[0] for option in box.options]
    assert offered[:4] == ["all-MiniLM-L6-v2", "tiny-bert", "tiny-gpt2", "tiny-llama"]
    # Then the Transformers SeqLens trained (models/analysis/trained_attention.py).
    assert offered[4:] == ["Induction model", "Chinese character model", "Character language model"]
    assert "pickled" not in offered
    # The refused folder is named with its reason, as plain text.
    assert any(text.startswith("pickled: only a pickle checkpoint") for text in texts(at))


def test_a_tiny_gpt2_draws_its_heads_under_the_causal_mask():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-gpt2", layer="1", head="2")
    assert not at.exception
    one = chart(at, "one_head")
    assert grid_columns(one) == ["0:<s>", "1:the", "2:cat", "3:sat", "4:on", "5:the", "6:mat"]
    z = grid_values(one)
    assert z.shape == (7, 7)
    assert np.all(z[np.triu_indices(7, k=1)] == 0.0) and np.all(z[np.tril_indices(7)] > 0.0)
    assert any(m.startswith("Causal mask") for m in messages(at))
    assert "Layer 1, head 2" in [s.value for s in at.subheader]


def test_llama_says_which_key_value_head_each_query_head_reads():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-llama", head="3")
    assert not at.exception
    gqa = [m for m in messages(at) if m.startswith("Grouped-query attention")]
    assert gqa and "4 query heads share 2 key/value heads" in gqa[0]
    assert "H0–H1 → KV0, H2–H3 → KV1" in gqa[0]
    assert "reads key/value head KV1" in [c.value for c in at.caption]
    hover = chart(at, "all_heads")["panels"][0]["hover"]["text"]
    assert hover[1].endswith("reads key/value head KV0")


def test_switching_a_gpt2_head_off_shows_next_token_probabilities_before_and_after():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-gpt2", ablate="L0 H1")
    assert not at.exception
    assert at.multiselect(key="ablate").value == [1]
    bars = chart(at, "ablate_next")["data"]
    assert [bar["name"] for bar in bars] == ["all heads", "1 head(s) off"]
    assert bars[0]["y"] == bars[1]["y"]
    assert any("KL divergence" in c.value for c in at.caption)


def test_every_head_is_measured_alone_on_request_for_this_sentence():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-gpt2", view="ablation")
    with pytest.raises(AssertionError):
        chart(at, "every_head_effect")  # not on every keystroke: only when asked
    at.button(key="every_head_go").click().run()
    grid = chart(at, "every_head_effect")
    assert grid["panels"][0]["title"].startswith("KL divergence of the next token")
    assert np.all(grid_values(grid) > 0.0) and grid_values(grid).shape == (2, 4)
    # Another sentence asks again.
    at.text_input(key="sentence").set_value("the dog sat").run()
    with pytest.raises(AssertionError):
        chart(at, "every_head_effect")
    assert at.button(key="every_head_go")


def test_no_head_off_says_the_output_is_the_original():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-llama", view="ablation")
    assert any(m.startswith("No head is switched off") for m in messages(at))
    with pytest.raises(AssertionError):
        chart(at, "ablate_next")


def test_switching_a_minilm_head_off_moves_the_sentence_embedding():
    at = open_lesson("heads", ablate="L3 H1")
    assert not at.exception
    [metric] = at.metric
    assert 0.9 < float(metric.value) < 1.0
    cosine = chart(at, "ablate_tokens")["data"][0]["y"]
    assert len(chart(at, "ablate_tokens")["data"][0]["x"]) == 15
    assert cosine is not None


def test_rollout_through_the_last_layer_is_drawn_with_its_caveat():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-bert", view="rollout")
    assert not at.exception
    assert at.slider(key="rollout_layer").value == 1
    assert grid_columns(chart(at, "rollout"))[0] == "0:[CLS]"
    assert any(m.startswith("Rollout is not an explanation") for m in messages(at))


def test_a_link_to_a_refused_or_unknown_model_opens_minilm_with_a_note():
    for bad in ("folder:pickled", "/etc/passwd", "folder:../tiny-gpt2"):
        at = open_lesson("heads", SENTENCE, model=bad)
        assert not at.exception
        assert at.selectbox(key="model").value == "all-MiniLM-L6-v2"
        assert any("does not offer" in m for m in messages(at))
        assert grid_columns(chart(at, "one_head"))[0] == "0:[CLS]"


def test_changing_the_model_starts_its_controls_afresh():
    at = open_lesson("heads", SENTENCE, layer="5", head="11")
    at.selectbox(key="model").set_value("folder:tiny-gpt2").run()
    assert not at.exception
    assert at.selectbox(key="layer").value == 1 and at.selectbox(key="head").value == 1
    assert grid_columns(chart(at, "one_head"))[0] == "0:<s>"


def test_the_model_choice_speaks_chinese():
    at = open_lesson("heads", SENTENCE, model="folder:tiny-llama", lang="zh")
    assert not at.exception
    assert any(m.startswith("分组查询注意力") for m in messages(at))
    assert at.selectbox(key="model").value == "folder:tiny-llama"
    assert "模型文件夹" in at.selectbox(key="model").options[3]


def test_models_over_the_operators_parameter_limit_are_listed_with_the_reason(monkeypatch):
    monkeypatch.setenv("SEQLENS_MAX_PARAMS", "20k")
    model_choices.clear()
    at = open_lesson("heads", SENTENCE, model="folder:tiny-gpt2")
    assert not at.exception
    # Every tiny model has 25–35 thousand parameters: all refused. MiniLM ships with
    # SeqLens and stays on offer, so a link to a refused model falls back to it; so do the
    # small Transformers SeqLens trained itself (the limit is for the operator's models).
    assert [o.split(" · ")[0] for o in at.selectbox(key="model").options] == [
        "all-MiniLM-L6-v2",
        "Induction model",
        "Chinese character model",
        "Character language model",
    ]
    assert at.selectbox(key="model").value == "all-MiniLM-L6-v2"
    refused = [text for text in texts(at) if "over this server's limit of 20.0 k" in text]
    assert [text.split(":")[0] for text in refused] == ["tiny-bert", "tiny-gpt2", "tiny-llama"]
