"""The attention lesson on trained SeqLens Transformers: the shipped induction and language
models, and a visitor's own, chosen from the model list like the Hugging Face models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import (
    chart,
    forget_visitor,
    grid_columns,
    grid_values,
    messages,
    one_time_link,
    open_lesson,
    save_shipped,
    texts,
)

from components.ui.runs.shared import load_visitor_store
from models.analysis import trained_sources as ts
from models.analysis.probes import circuit, head_scores
from models.training import checkpoints
from models.training.tasks import task_from_config
from models.training.train import CHECKPOINT_DIR

SENTENCE = "The cat sat on the mat."
SECTIONS = {"all_heads", "one_head", "focus", "summary", "ablate_next", "rollout"}


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(
        m.startswith(("Something went wrong", "This model could not")) for m in messages(at)
    )


def _keys(at) -> set[str]:
    drawn = [*at.get("plotly_chart"), *at.get("bidi_component")]
    return {el.proto.id.rsplit("-", 1)[-1] for el in drawn}


def _keys_in_every_tab(at) -> set[str]:
    """The charts drawn, each tab below the heads opened in turn."""
    keys = set()
    for view in ("statistics", "ablation", "rollout"):
        at.session_state["view"] = view
        at.run()
        _no_failure(at)
        keys |= _keys(at)
    return keys


def _minilm_instead(at) -> None:
    """The page fell back to MiniLM and says the visitor's model is not there."""
    _no_failure(at)
    assert at.selectbox(key="model").value == "all-MiniLM-L6-v2"
    assert any("not among your saved models" in m for m in messages(at))
    assert grid_columns(chart(at, "one_head"))[0] == "0:[CLS]"


def _metadata(name: str) -> dict:
    return json.loads((CHECKPOINT_DIR / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ts.SHIPPED_TRANSFORMERS)
def test_every_section_runs_on_each_shipped_trained_model(name):
    at = open_lesson("heads", SENTENCE, model=f"trained:{name}", ablate="L1 H3")
    _no_failure(at)
    assert at.selectbox(key="model").value == f"trained:{name}"
    meta = _metadata(name)
    spec = meta["model"]
    assert at.selectbox(key="layer").options == [str(i) for i in range(spec["n_layers"])]
    assert at.selectbox(key="head").options == [str(i) for i in range(spec["n_heads"])]
    about = next(m for m in messages(at) if m.startswith("A causal Transformer SeqLens trained"))
    assert f"{meta['metrics']['accuracy']:.1%}" in about
    assert f"{spec['n_layers']} layers × {spec['n_heads']} heads" in about
    # Its own readout: the bars name tokens of the task's vocabulary.
    vocab = {ts.shown_token(token) for token in task_from_config(meta["task"]).vocab}
    bars = chart(at, "ablate_next")["data"]
    assert [bar["name"] for bar in bars] == ["all heads", "1 head(s) off"]
    assert set(bars[0]["y"]) <= vocab
    assert any("readout it was trained with" in c for c in at.caption.values)
    # Every head in turn, on request.
    at.button(key="every_head_go").click().run()
    _no_failure(at)
    effects = grid_values(chart(at, "every_head_effect"))
    assert effects.shape == (spec["n_layers"], spec["n_heads"]) and np.all(effects >= 0)
    assert np.isfinite(effects).all() and effects.max() > 0
    assert _keys_in_every_tab(at) >= SECTIONS


def test_the_induction_model_reads_its_own_sequence_and_names_its_measured_heads():
    at = open_lesson("heads", SENTENCE, model=f"trained:{ts.SHIPPED_INDUCTION}")
    _no_failure(at)
    assert any("not your sentence" in c for c in at.caption.values)
    assert not any("The · cat" in text or "cat" in text for text in texts(at))
    checkpoint = checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_INDUCTION)
    roles = circuit(head_scores(checkpoint.model, task_from_config(checkpoint.task)))
    i_layer, i_head, i_score = roles["induction"]
    p_layer, p_head, _ = roles["previous_token"]
    named = next(c for c in at.caption.values if c.startswith("Measured on held-out"))
    assert f"layer {i_layer}, head {i_head} ({i_score:.2f}" in named
    at.button(key="jump_induction").click().run()
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (i_layer, i_head)
    # The chosen head attends from the last token to the one after its previous occurrence.
    tokens = grid_columns(chart(at, "one_head"))
    pattern = grid_values(chart(at, "one_head"))
    last = [label.split(":", 1)[1] for label in tokens]
    earlier = len(last) - 1 - last[::-1].index(last[-1], 1)
    assert int(np.argmax(pattern[-1])) == earlier + 1
    at.button(key="jump_previous").click().run()
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (p_layer, p_head)
    # The token focus opens on the last token, whose next symbol the heads predict.
    assert at.selectbox(key="token").value == len(tokens) - 1


def test_the_language_model_reads_the_sentence_and_notes_characters_it_lacks():
    at = open_lesson("heads", "Hi 😀 猫.", model=f"trained:{ts.SHIPPED_LM}", lang="zh")
    _no_failure(at)
    assert "H · i · ␣ · ␣ · 猫 · ." in texts(at)
    assert any(m.startswith("你的句子中有 1 个字符") for m in messages(at))
    assert "😀" in texts(at)
    assert at.selectbox(key="model").options[-1].startswith("字符级语言模型")


def test_a_sentence_the_language_model_cannot_read_at_all_gets_a_message():
    at = open_lesson("heads", "😀😀", model=f"trained:{ts.SHIPPED_LM}")
    _no_failure(at)
    assert any("knows none of the characters" in m for m in messages(at))


def _link(key: str) -> str:
    return one_time_link(load_visitor_store(), key)


@pytest.fixture
def saved_visitor():
    """A visitor key with an induction Transformer and a copy-task Transformer saved under it."""
    store = load_visitor_store()
    key = store.new_key()
    shipped = (ts.SHIPPED_INDUCTION, "copy-lag5-transformer")
    names = [save_shipped(store, key, name) for name in shipped]
    yield key, names
    forget_visitor(store, key)


def test_a_visitors_own_models_are_offered_and_every_section_runs(saved_visitor):
    key, names = saved_visitor
    for name in names:
        at = open_lesson(
            "heads", SENTENCE, visitor=_link(key), model=f"mine:{name}", ablate="L0 H1"
        )
        _no_failure(at)
        assert at.selectbox(key="model").value == f"mine:{name}"
        assert any(o.startswith(f"Your model {name}") for o in at.selectbox(key="model").options)
        assert _keys_in_every_tab(at) >= SECTIONS
    assert any("repeat symbols 5 steps later" in m for m in messages(at))


def test_two_visitors_models_of_the_same_name_are_never_confused():
    store = load_visitor_store()
    first, second = store.new_key(), store.new_key()
    try:
        name = save_shipped(store, first, ts.SHIPPED_INDUCTION, "120000", as_name="mine")
        assert name == save_shipped(store, second, "copy-lag5-transformer", "120000", "mine")
        shown = ((first, "comes twice", True), (second, "repeat symbols 5 steps later", False))
        for visitor, task, induction_symbols in shown:
            at = open_lesson("heads", SENTENCE, visitor=_link(visitor), model=f"mine:{name}")
            _no_failure(at)
            assert any(task in m for m in messages(at))
            # The heads drawn are this visitor's model's (induction symbols are t0 … t31).
            first_label = grid_columns(chart(at, "one_head"))[0]
            assert first_label.startswith("0:t") == induction_symbols
    finally:
        forget_visitor(store, first)
        forget_visitor(store, second)


def test_another_visitor_cannot_open_those_models_and_is_told_why(saved_visitor):
    _, names = saved_visitor
    _minilm_instead(open_lesson("heads", SENTENCE, model=f"mine:{names[0]}"))
    # A link copied from the address bar names the model by its label, in either language.
    for label in (
        f"Your model {names[0]} · SeqLens Transformer you trained",
        f"你的模型 {names[0]} · 你训练的 SeqLens Transformer",
    ):
        _minilm_instead(open_lesson("heads", SENTENCE, model=label))
    # Anything else the link names gets the link's own note only.
    at = open_lesson("heads", SENTENCE, model="Your model is this")
    assert not any("not among your saved models" in m for m in messages(at))
    assert any("does not offer" in m for m in messages(at))


def test_a_model_deleted_while_chosen_gives_a_note_not_a_traceback(saved_visitor):
    key, names = saved_visitor
    at = open_lesson("heads", SENTENCE, visitor=_link(key), model=f"mine:{names[1]}")
    _no_failure(at)
    assert at.selectbox(key="model").value == f"mine:{names[1]}"
    forget_visitor(load_visitor_store(), key)  # the age limit or the size cap, meanwhile
    _minilm_instead(at.run())


def test_a_checkpoint_gone_before_it_was_loaded_gives_a_note(saved_visitor):
    key, names = saved_visitor
    at = open_lesson("heads", SENTENCE, visitor=_link(key))
    _no_failure(at)
    store = load_visitor_store()
    stem = store.folder(key) / names[1]
    stem.with_suffix(".safetensors").unlink()  # listed (its JSON is there), weights gone
    at.selectbox(key="model").set_value(f"mine:{names[1]}").run()
    _no_failure(at)
    assert any(m.startswith("Your model is no longer saved") for m in messages(at))
    assert not at.get("plotly_chart")


@pytest.mark.parametrize(
    "bad", ["trained:nothing", "trained:../../etc/passwd", "mine:", "checkpoint:/etc/passwd"]
)
def test_bad_trained_keys_in_a_link_open_minilm_with_a_note(bad):
    at = open_lesson("heads", SENTENCE, model=bad)
    _no_failure(at)
    assert at.selectbox(key="model").value == "all-MiniLM-L6-v2"
    assert any("does not offer" in m or "not among your saved" in m for m in messages(at))
