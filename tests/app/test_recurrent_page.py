"""The recurrent lesson, driven through AppTest as a visitor would."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import chart, chart_keys, every_chart, messages, open_lesson, plotly_array, texts

from models.analysis import gradient_flow as gf
from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.tokenizer import MAX_TOKENS, Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

# The lesson's parts, one tab each (only the open one is drawn), and the charts of each.
PART_CHARTS = {
    "distance": {"rc_distance"},
    "theory": {"rc_theory", "rc_jacobian"},
    "clipping": {"rc_clip_bars", "rc_clip_lines"},
    "units": {"rc_units"},
    "gates": {"rc_gates_lstm", "rc_gates_gru"},
}
CHARTS = set().union(*PART_CHARTS.values())


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


_array = plotly_array


def _open_parts(sentence: str | None = None, **query) -> dict:
    """The lesson opened on each of its parts, by a link naming it."""
    return {part: open_lesson("recurrent", sentence, rc_part=part, **query) for part in PART_CHARTS}


def _keys_of(opened: dict) -> set[str]:
    return set().union(*(chart_keys(at) for at in opened.values()))


def _all_finite(node) -> bool:
    """No NaN or inf anywhere in a figure: plain numbers and base64 arrays alike."""
    if isinstance(node, float):
        return bool(np.isfinite(node))
    if isinstance(node, dict):
        if "bdata" in node:
            return bool(np.isfinite(_array(node).astype(np.float64)).all())
        return all(_all_finite(value) for value in node.values())
    if isinstance(node, list):
        return all(_all_finite(value) for value in node)
    return True


def test_sentence_draws_every_view_with_token_labels():
    opened = _open_parts("我爱你 and the cat sat", rc_weights="constructed")
    for at in opened.values():
        _no_failure(at)
        assert all(_all_finite(spec) for spec in every_chart(at))
        assert "我 · 爱 · 你 · and · the · cat · sat" in texts(at)
        assert not any("overflowed" in m for m in messages(at))
    # The spectra of the visitor's own sentence wait for a click (next test).
    assert _keys_of(opened) >= CHARTS - {"rc_jacobian"}
    units = chart(opened["units"], "rc_units")
    assert units["panels"][0]["columns"][:3] == ["0:我", "1:爱", "2:你"]
    names = [trace["name"] for trace in chart(opened["distance"], "rc_distance")["data"]]
    assert names == ["RNN", "LSTM", "GRU", "Transformer"]


def _spectra_of(sentence: str) -> dict[str, np.ndarray]:
    """The step Jacobian norms of the lesson's constructed models on `sentence`, computed
    here from scratch: the tokenizer, the Transformer's token vectors, one pass per model."""
    tokenizer = Tokenizer()
    ids = tokenizer.encode(sentence, MAX_TOKENS).ids
    X = Transformer(TransformerConfig(d_vocab=tokenizer.vocab_size)).W_E[list(ids)].detach()
    return {
        name: gf.step_jacobian_norms(
            Recurrent(RecurrentConfig(cell=name.lower(), num_inputs=64, num_hiddens=64)), X
        )
        for name in ("RNN", "LSTM", "GRU")
    }


def test_spectra_of_your_sentence_come_on_request_then_follow_typing():
    at = open_lesson(
        "recurrent", "the cat sat on the mat", rc_weights="constructed", rc_part="theory"
    )
    _no_failure(at)
    assert "rc_jacobian" not in chart_keys(at)
    button = at.button(key="rc_spectra_go")
    assert button.label == "Compute the step Jacobian spectra for your sentence"
    assert any("computed once you ask" in c.value for c in at.caption)
    button.click().run()
    _no_failure(at)
    lines = {trace["name"]: _array(trace["y"]) for trace in chart(at, "rc_jacobian")["data"]}
    for name, expected in _spectra_of("the cat sat on the mat").items():
        np.testing.assert_allclose(lines[name], expected, rtol=1e-9)
    assert any(c.value.startswith("The largest factor by which") for c in at.caption)
    # Asked for once, they follow the sentence as the visitor types on.
    at.text_input("sentence").input("a dog ran far away from home").run()
    _no_failure(at)
    assert not _has_button(at, "rc_spectra_go")
    lines = {trace["name"]: _array(trace["y"]) for trace in chart(at, "rc_jacobian")["data"]}
    for name, expected in _spectra_of("a dog ran far away from home").items():
        np.testing.assert_allclose(lines[name], expected, rtol=1e-9)


def _has_button(at, key: str) -> bool:
    return any(b.key == key for b in at.button)


def test_extreme_settings_draw_the_charts_and_name_the_overflow_step():
    query = dict(
        rc_source="synthetic",
        rc_length="512",
        rc_radius="1.5",
        rc_act="relu",
        rc_init="identity",
        rc_hidden="32",
    )
    opened = _open_parts(**query)
    for at in opened.values():
        _no_failure(at)
        assert all(_all_finite(spec) for spec in every_chart(at))
    assert _keys_of(opened) >= CHARTS
    at = opened["distance"]  # the notes on overflow sit above the parts
    model = Recurrent(
        RecurrentConfig(num_hiddens=32, activation="relu", init="identity", radius=1.5)
    )
    expected = gf.recurrent_gradient_flow(model, gf.synthetic_inputs(512, 64), 511)
    step = expected["overflow_forward"]
    assert step is not None
    overflow = [m for m in messages(at) if m.startswith("RNN: the hidden state overflowed")]
    assert overflow and f"at step {step};" in overflow[0], messages(at)
    assert any("not finite numbers" in m for m in messages(at))
    # Clipping an overflowed gradient is said to fail, not drawn as if it worked.
    assert any("cannot repair" in c.value for c in opened["clipping"].caption)


def test_theory_line_is_drawn_dashed_over_the_measured_line():
    at = open_lesson(
        "recurrent", rc_source="synthetic", rc_length="80", rc_radius="0.8", rc_part="theory"
    )
    _no_failure(at)
    measured, formula, _ = chart(at, "rc_theory")["data"]
    assert formula["line"]["dash"] == "dash" and measured["line"]["dash"] == "solid"
    k, y = _array(formula["x"]), _array(formula["y"])
    np.testing.assert_allclose(y, 0.8**k, rtol=1e-12)
    np.testing.assert_allclose(_array(measured["y"]), y, rtol=1e-4)


def test_clipping_lowers_the_total_but_not_the_early_share():
    at = open_lesson(
        "recurrent", rc_source="synthetic", rc_length="100", rc_clip="0.01", rc_part="clipping"
    )
    _no_failure(at)
    totals, shares = chart(at, "rc_clip_bars")["data"]
    total, clipped = _array(totals["y"])
    assert clipped == pytest.approx(0.01, rel=1e-3) and total > clipped
    before, after = _array(shares["y"])
    assert after == pytest.approx(before, rel=1e-5)


def test_a_length_past_the_cap_is_refused_with_a_note():
    at = open_lesson("recurrent", rc_source="synthetic", rc_length="100000")
    _no_failure(at)
    assert any(m.startswith("The link") and "512" in m for m in messages(at))
    assert "τ = 511" in " ".join(c.value for c in at.caption)


def test_a_link_naming_a_part_opens_it_and_draws_only_its_charts():
    at = open_lesson(
        "recurrent", "the cat sat on the mat", rc_weights="constructed", rc_part="gates"
    )
    _no_failure(at)
    assert chart_keys(at) == PART_CHARTS["gates"] and "rc_distance" not in chart_keys(at)
    assert [tab.label for tab in at.tabs][4] == at.session_state["rc_part"] == "5 · Gates"
    assert any("forget gate" in c.value for c in at.caption)
    # Typing reruns the open part, on the new sentence.
    at.text_input("sentence").input("a dog ran far").run()
    _no_failure(at)
    assert chart_keys(at) == PART_CHARTS["gates"]
    assert chart(at, "rc_gates_lstm")["panels"][0]["columns"][:2] == ["0:a", "1:dog"]


def test_a_link_setting_the_network_opens_the_clipping_part_and_the_unit_part_keeps_it():
    # A link made before the lesson had tabs: it names no part, only the network.
    at = open_lesson(
        "recurrent", "the cat sat on the mat", rc_weights="constructed", rc_model="LSTM"
    )
    _no_failure(at)
    assert chart_keys(at) == PART_CHARTS["clipping"]
    assert at.session_state["rc_part"] == "3 · Clipping"
    assert at.selectbox(key="rc_model").value == "LSTM"
    assert chart(at, "rc_clip_bars")["layout"]["title"]["text"].startswith("LSTM:")
    # The unit part draws the same control: opening it keeps the network chosen.
    at.selectbox(key="rc_model").set_value("GRU").run()
    at.session_state["rc_part"] = "units"
    at.run()
    _no_failure(at)
    assert chart_keys(at) == PART_CHARTS["units"]
    assert at.selectbox(key="rc_model").value == "GRU"
    assert any(c.value.startswith("Each column is a step") and "GRU" in c.value for c in at.caption)
    # A network the lesson does not have is noted, and the part opens on the first one.
    at = open_lesson(
        "recurrent", "the cat sat on the mat", rc_weights="constructed", rc_model="CNN"
    )
    _no_failure(at)
    assert chart_keys(at) == PART_CHARTS["clipping"]
    assert at.selectbox(key="rc_model").value == "RNN"
    assert any(m.startswith("The link") for m in messages(at))


def _rnn_at_inputs(sentence: str) -> np.ndarray:
    """‖∂L/∂X_t‖ of the constructed RNN of the default controls on `sentence`, against k."""
    tokenizer = Tokenizer()
    ids = tokenizer.encode(sentence, MAX_TOKENS).ids
    X = Transformer(TransformerConfig(d_vocab=tokenizer.vocab_size)).W_E[list(ids)].detach()
    rnn = Recurrent(RecurrentConfig(cell="rnn", num_inputs=64, num_hiddens=64))
    return gf.recurrent_gradient_flow(rnn, X, len(ids) - 1)["grad_X"][::-1]


def test_the_first_view_reads_the_visitors_sentence_and_follows_their_typing():
    at = open_lesson("recurrent", "the cat sat on the mat")
    _no_failure(at)
    assert at.selectbox(key="rc_weights").value == "constructed"
    assert chart_keys(at) == PART_CHARTS["distance"]
    for sentence in ("the cat sat on the mat", "My cat sat on the warm laptop because it was"):
        if sentence != at.text_input("sentence").value:
            at.text_input("sentence").input(sentence).run()
            _no_failure(at)
        spec = chart(at, "rc_distance")
        rnn = next(trace for trace in spec["data"] if trace["name"] == "RNN")
        np.testing.assert_allclose(_array(rnn["y"]), _rnn_at_inputs(sentence), rtol=1e-5)
        tokens = Tokenizer().encode(sentence, MAX_TOKENS).tokens
        assert " · ".join(tokens) in texts(at)
    # The trained models are one option away, named as trained; the control says which
    # reads what.
    weights = at.selectbox(key="rc_weights")
    assert weights.options[:2] == [
        "Untrained, built from the settings: reads your sentence",
        "Trained on the copy task, lag 20 (shipped)",
    ]
    assert "read the sequence of the task they learned" in weights.help


@pytest.mark.parametrize(
    "label", ["Trained on the copy task, lag 20 (shipped)", "在复制任务上训练，延迟 20（随附）"]
)
def test_a_link_made_on_the_trained_weights_still_opens_them(label):
    at = open_lesson("recurrent", "the cat sat on the mat", rc_weights=label)
    _no_failure(at)
    assert at.selectbox(key="rc_weights").value == "copy-lag20"
    assert any(m.startswith("Shown: Trained on the copy task") for m in messages(at))
