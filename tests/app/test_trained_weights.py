"""Trained weights as the lessons' first view, and a visitor's models brought back by a link."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import (
    chart,
    chart_keys,
    every_chart,
    forget_visitor,
    heatmap_grid,
    link_token,
    messages,
    one_time_link,
    open_lesson,
    plotly_array,
    save_shipped,
    texts,
)
from safetensors.numpy import load_file

from components.ui.runs.shared import load_visitor_store
from models.analysis import gradient_flow as gf
from models.analysis import trained_sources as ts
from models.analysis.masks import KINDS
from models.analysis.probes import previous_occurrence
from models.training import checkpoints
from models.training.task_base import IGNORE
from models.training.tasks import make_task
from models.training.train import CHECKPOINT_DIR

SENTENCE = "the cat sat on the mat"
# The masks lesson draws one stage of its stepper at a time: its first, X, by default.
FIRST_STAGE_CHARTS = {"mask_row", "mask_step_x_query"}
SOFTMAX_CHARTS = {"mask_row", "mask_step_hook_pattern"}
RECURRENT_CHARTS = {"rc_distance", "rc_jacobian", "rc_units", "rc_gates_lstm", "rc_gates_gru"}
# The recurrent lesson's parts that draw them, each opened by its link (one tab at a time).
RECURRENT_PARTS = ("theory", "units", "gates")


def _metadata(name: str) -> dict:
    return json.loads((CHECKPOINT_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


def _finite(at) -> bool:
    return all(
        "NaN" not in json.dumps(s) and "Infinity" not in json.dumps(s) for s in every_chart(at)
    )


# --- the recurrent lesson ------------------------------------------------------------------


def test_recurrent_lesson_shows_the_shipped_copy_models_one_switch_away_and_says_so():
    # The first view reads the visitor's sentence; a link naming the trained weights opens them.
    assert open_lesson("recurrent", SENTENCE).selectbox(key="rc_weights").value == "constructed"
    shipped = {"rc_weights": ts.SHIPPED_SOURCE}
    at = open_lesson("recurrent", SENTENCE, **shipped)
    _no_failure(at)
    assert at.selectbox(key="rc_weights").value == ts.SHIPPED_SOURCE
    parts = {
        part: open_lesson("recurrent", SENTENCE, rc_part=part, **shipped)
        for part in RECURRENT_PARTS
    }
    for opened in parts.values():
        _no_failure(opened)
        assert opened.selectbox(key="rc_weights").value == ts.SHIPPED_SOURCE
    keys = chart_keys(at).union(*(chart_keys(opened) for opened in parts.values()))
    assert keys >= RECURRENT_CHARTS and all(_finite(a) for a in (at, *parts.values()))
    shown = next(m for m in messages(at) if m.startswith("Shown: Trained on the copy task"))
    for kind, name in (("rnn", "RNN"), ("lstm", "LSTM"), ("gru", "GRU")):
        accuracy = _metadata(f"copy-lag20-{kind}")["metrics"]["accuracy"]
        assert f"{name} {accuracy:.1%}" in shown
    task = _metadata("copy-lag20-lstm")["task"]
    assert f"{task['length']} symbols {task['lag']} steps" in shown
    labels, _ = ts.example(task)
    assert " · ".join(labels) in texts(at)
    assert chart(parts["gates"], "rc_gates_lstm")["panels"][0]["columns"][0] == f"0:{labels[0]}"
    assert at.slider(key="rc_radius").disabled and at.selectbox(key="rc_act").disabled
    gates = next(c for c in parts["gates"].caption.values if "latch" in c)
    assert "learned, not set by a control" in gates
    # The latched units, counted independently over the wait between symbols and recall.
    lstm = checkpoints.load(CHECKPOINT_DIR / "copy-lag20-lstm").model
    _, ids = ts.example(task)
    flow = gf.recurrent_gradient_flow(lstm.core, ts.inputs_for(lstm, ids), len(ids) - 1)
    latched = int((flow["F"][task["length"] : task["lag"]] > 0.9).all(axis=0).sum())
    assert latched > 0 and f"{latched} of its {flow['F'].shape[1]} units" in gates


def test_the_trained_view_takes_r_from_the_trained_w_hh_not_from_the_disabled_slider():
    # The slider says r = 0.5; the trained weights must ignore it.
    at = open_lesson("recurrent", SENTENCE, rc_part="theory", rc_weights=ts.SHIPPED_SOURCE)
    at.session_state["rc_radius"] = 0.5
    at.run()
    _no_failure(at)
    tensors = load_file(str(CHECKPOINT_DIR / "copy-lag20-rnn.safetensors"))
    r = float(np.linalg.svd(tensors["core.W_hh"].astype(np.float64), compute_uv=False)[0])
    jacobian = next(c for c in at.caption.values if "activation's largest slope" in c)
    assert f"times r = {r:.2f}." in jacobian, jacobian
    theory = [c for c in at.caption.values if "largest singular value of the trained" in c]
    assert len(theory) == 1 and f"r = {r:.2f} is" in theory[0], theory
    lines = {line["name"]: line for line in chart(at, "rc_theory")["data"]}
    assert set(lines) == {f"r^k with r = {r:.2f}", "trained RNN (measured)"}  # no linear RNN
    formula = lines[f"r^k with r = {r:.2f}"]
    assert formula["line"]["dash"] == "dash"
    k = plotly_array(formula["x"])
    np.testing.assert_allclose(plotly_array(formula["y"]), r**k, rtol=1e-9)
    # An upper bound: every activation's slope is at most 1 (float32 rounding aside).
    trained = plotly_array(lines["trained RNN (measured)"]["y"])
    assert (trained <= r**k * (1 + 1e-6)).all()


def test_an_old_recurrent_link_with_construction_settings_keeps_its_constructed_weights():
    at = open_lesson("recurrent", SENTENCE, rc_radius="0.8", rc_act="relu")
    _no_failure(at)
    assert at.selectbox(key="rc_weights").value == "constructed"
    assert not at.slider(key="rc_radius").disabled and at.slider(key="rc_radius").value == 0.8
    assert "the · cat · sat · on · the · mat" in texts(at)
    assert not any(m.startswith("Shown: Trained") for m in messages(at))


# --- the masks lesson ----------------------------------------------------------------------


def test_masks_lesson_opens_on_a_model_reading_the_sentence_with_the_task_model_one_choice_away():
    at = open_lesson("masks", SENTENCE)
    _no_failure(at)
    assert at.selectbox(key="mask_weights").value == ts.SHIPPED_LM
    options = at.selectbox(key="mask_weights").options
    assert options[0].startswith("Your sentence")
    assert any(option.startswith("Trained task model: induction") for option in options)
    assert chart_keys(at) >= FIRST_STAGE_CHARTS and _finite(at)


def test_the_trained_induction_model_names_its_heads():
    at = open_lesson("masks", SENTENCE, mask_weights=ts.SHIPPED_INDUCTION, mask_step="softmax")
    _no_failure(at)
    assert at.selectbox(key="mask_weights").value == ts.SHIPPED_INDUCTION
    assert chart_keys(at) >= SOFTMAX_CHARTS and _finite(at)
    meta = _metadata(ts.SHIPPED_INDUCTION)
    about = next(m for m in messages(at) if m.startswith("Shown: a causal Transformer"))
    assert f"{meta['metrics']['accuracy']:.1%}" in about
    assert f"trained for {meta['training']['steps']} steps" in about
    labels, _ = ts.example(meta["task"])
    assert " · ".join(labels) in texts(at)
    assert len(heatmap_grid(chart(at, "mask_step_hook_pattern")["data"][0]["z"])) == len(labels)
    roles = next(c for c in at.caption.values if "strongest induction head" in c)
    assert "previous-token head" in roles
    # One click shows the strongest induction head, whose weights follow the repeat.
    at.button(key="mask_jump").click().run()
    _no_failure(at)
    layer, head = at.slider(key="mask_layer").value, at.slider(key="mask_head").value
    assert f"layer {layer}, head {head}" in roles
    # from each token of the second copy, to the token after its previous occurrence
    _, ids = ts.example(meta["task"])
    repeat = np.flatnonzero(make_task("induction").held_out(1).targets[0] != IGNORE)
    after_previous = previous_occurrence(ids.numpy())[repeat] + 1
    weights = heatmap_grid(chart(at, "mask_step_hook_pattern")["data"][0]["z"])
    assert np.mean(weights[repeat, after_previous]) > 0.3


def test_the_language_model_reads_the_sentence_character_by_character():
    at = open_lesson("masks", SENTENCE, mask_weights=ts.SHIPPED_LM, mask_step="softmax")
    _no_failure(at)
    lm = _metadata(ts.SHIPPED_LM)
    assert any(f"{lm['metrics']['accuracy']:.1%}" in m for m in messages(at))
    assert " · ".join("the␣cat␣sat␣on␣the␣mat") in texts(at)
    pattern = chart(at, "mask_step_hook_pattern")["data"][0]
    assert pattern["x"][:4] == ["0:t", "1:h", "2:e", "3:␣"]
    at = open_lesson("masks", "😀🙂", mask_weights=ts.SHIPPED_LM)
    _no_failure(at)
    assert any("nothing to read" in m for m in messages(at))


@pytest.mark.parametrize("kind", KINDS)
def test_every_mask_kind_runs_on_the_trained_weights(kind):
    at = open_lesson(
        "masks",
        SENTENCE,
        mask_weights=ts.SHIPPED_LM,
        mask_kind=kind,
        second="a cat",
        mask_window="2",
        mask_step="softmax",
    )
    _no_failure(at)
    assert chart_keys(at) >= SOFTMAX_CHARTS and _finite(at)
    grid = heatmap_grid(chart(at, "mask_step_hook_pattern")["data"][0]["z"])
    if kind == "cross":  # the shipped translator on its own example
        source, decoder, words, numerals = ts.translation_example(make_task("numbers").config())
        assert grid.shape == (len(decoder), len(source))
        assert " ".join(words) + "  →  " + " ".join(numerals) in texts(at)
        assert any("English number words into Chinese numerals" in m for m in messages(at))
        return
    n = len(SENTENCE)
    assert grid.shape == (n, n)
    seeing = ~np.isnan(grid).all(axis=1)
    np.testing.assert_allclose(np.nansum(grid, axis=1)[seeing], 1.0, atol=1e-5)
    if kind == "none":
        assert not np.isnan(grid).any()  # the trained causal model follows the lesson's mask
    if kind == "padding":
        assert np.isnan(grid[5:]).all()  # "a cat" has 5 characters


def test_random_weights_stay_selectable_and_a_bad_weights_value_is_noted():
    at = open_lesson("masks", SENTENCE, mask_weights="random", mask_step="softmax")
    _no_failure(at)
    assert any(c.startswith("Shown: random, untrained weights") for c in at.caption.values)
    assert chart(at, "mask_step_hook_pattern")["data"][0]["x"][:2] == ["0:the", "1:cat"]
    at = open_lesson("masks", SENTENCE, mask_weights="../../etc/passwd")
    _no_failure(at)
    assert at.selectbox(key="mask_weights").value == ts.SHIPPED_LM
    assert any(m.startswith("The link") for m in messages(at))


# --- the positional lesson -------------------------------------------------------------------


def test_positional_lesson_shows_what_the_trained_model_does_with_position_alone():
    at = open_lesson("positional", SENTENCE, pe_trained_head="2")
    _no_failure(at)
    assert {"pe_trained_before", "pe_trained_after", "pe_trained_offset"} <= chart_keys(at)
    meta = _metadata(ts.SHIPPED_INDUCTION)
    assert any(f"{meta['metrics']['accuracy']:.1%}" in m for m in messages(at))
    trained = checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_INDUCTION).model
    n = meta["model"]["n_ctx"]
    for when, model in (("after", trained), ("before", ts.untrained(trained))):
        drawn = plotly_array(chart(at, f"pe_trained_{when}")["data"][0]["z"]).reshape(n, n)
        expected = ts.positional_attention(model.core)[2]
        np.testing.assert_allclose(np.nan_to_num(drawn), expected, atol=1e-6)
    lines = chart(at, "pe_trained_offset")["data"]
    assert [line["name"] for line in lines] == [
        f"head {h}" for h in range(meta["model"]["n_heads"])
    ]


# --- a visitor's models, brought back by a link ---------------------------------------------


@pytest.fixture
def saved_visitor():
    """A visitor key with a Transformer and a copy run of four models saved under it."""
    store = load_visitor_store()
    key = store.new_key()
    names = [save_shipped(store, key, ts.SHIPPED_LM)]
    names += [save_shipped(store, key, f"copy-lag20-{kind}", "120000") for kind in ts.KINDS]
    yield key, names
    forget_visitor(store, key)


def _offered_links(at) -> list[str]:
    return [code.value for code in at.code if "visitor=" in code.value]


def test_a_one_time_link_brings_the_models_back_in_a_new_session(saved_visitor):
    key, names = saved_visitor
    token = one_time_link(load_visitor_store(), key)
    at = open_lesson("training", visitor=token)
    _no_failure(at)
    assert at.session_state["visitor_id"] == key
    listed = at.dataframe[0].value.iloc[:, 0].tolist()
    assert sorted(listed) == sorted(names)
    assert "visitor" not in at.query_params  # out of the address bar: not passed on by copying
    # The page offers a fresh link: not the one used up, and never the key itself.
    offered = _offered_links(at)
    assert len(offered) == 1 and key not in offered[0]
    fresh = link_token(offered[0])
    assert fresh != token
    at.run()
    assert _offered_links(at) == offered  # one link a session, until it is used

    at = open_lesson("masks", SENTENCE, visitor=fresh, mask_weights=names[0])
    _no_failure(at)
    assert at.selectbox(key="mask_weights").value == names[0]
    assert any(m.startswith("Shown: a causal Transformer") for m in messages(at))
    assert chart_keys(at) >= FIRST_STAGE_CHARTS

    run = names[1].rsplit("-", 1)[0]
    token = one_time_link(load_visitor_store(), key)
    at = open_lesson("recurrent", SENTENCE, visitor=token, rc_weights=run)
    _no_failure(at)
    assert at.selectbox(key="rc_weights").value == run
    assert any(m.startswith(f"Shown: Your run {run}") for m in messages(at))


def test_a_link_opens_the_models_in_the_first_session_only(saved_visitor):
    key, names = saved_visitor
    token = one_time_link(load_visitor_store(), key)
    first = open_lesson("training", visitor=token)
    assert first.session_state["visitor_id"] == key
    # The same link again, as from a browser's history: a note, and none of the models.
    again = open_lesson("training", visitor=token)
    _no_failure(again)
    assert again.session_state["visitor_id"] != key
    assert any(m.startswith("This link was used already") for m in messages(again))
    assert not again.dataframe and not _offered_links(again)
    again = open_lesson("masks", SENTENCE, visitor=token, mask_weights=names[0])
    _no_failure(again)
    assert any(m.startswith("This link was used already") for m in messages(again))
    options = again.selectbox(key="mask_weights").options
    assert not any(name in option for name in names for option in options)


def test_a_made_up_key_in_a_link_opens_nothing():
    made_up = "0123456789abcdef" * 2  # 32 hex digits, as a key looked before
    at = open_lesson("training", visitor=made_up)
    _no_failure(at)
    assert at.session_state["visitor_id"] != made_up
    assert any(m.startswith("This link opens no saved models") for m in messages(at))


def test_without_the_key_another_visitor_cannot_reach_those_models(saved_visitor):
    _, names = saved_visitor
    at = open_lesson("masks", SENTENCE, mask_weights=names[0])
    _no_failure(at)
    assert not any(names[0] in option for option in at.selectbox(key="mask_weights").options)
    assert at.selectbox(key="mask_weights").value == ts.SHIPPED_LM
    assert any(m.startswith("The link") for m in messages(at))


@pytest.mark.parametrize("bad", ["abc", "0" * 33, "../../" + "0" * 26, "%2e%2e%2f", "<b>x</b>"])
def test_a_bad_visitor_key_in_a_link_gives_a_note_not_a_crash(bad):
    at = open_lesson("training", visitor=bad)
    _no_failure(at)
    assert any("This link opens no saved models" in m for m in messages(at))
    key = at.session_state["visitor_id"]
    assert load_visitor_store().keys.check(key) and key != bad
    at = open_lesson("positional", SENTENCE, visitor=bad)
    _no_failure(at)
    assert any("This link opens no saved models" in m for m in messages(at))
