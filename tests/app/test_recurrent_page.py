"""The recurrent lesson, driven through AppTest as a visitor would."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import chart, chart_keys, every_chart, messages, open_lesson, plotly_array, texts

from models.analysis import gradient_flow as gf
from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.tokenizer import MAX_TOKENS, Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

CHARTS = {
    "rc_distance",
    "rc_theory",
    "rc_jacobian",
    "rc_clip_bars",
    "rc_clip_lines",
    "rc_units",
    "rc_gates_lstm",
    "rc_gates_gru",
}


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


_array = plotly_array


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
    at = open_lesson("recurrent", "我爱你 and the cat sat", rc_weights="constructed")
    _no_failure(at)
    # The spectra of the visitor's own sentence wait for a click (next test).
    assert chart_keys(at) >= CHARTS - {"rc_jacobian"}
    assert all(_all_finite(spec) for spec in every_chart(at))
    assert "我 · 爱 · 你 · and · the · cat · sat" in texts(at)
    assert chart(at, "rc_units")["panels"][0]["columns"][:3] == ["0:我", "1:爱", "2:你"]
    names = [trace["name"] for trace in chart(at, "rc_distance")["data"]]
    assert names == ["RNN", "LSTM", "GRU", "Transformer"]
    assert not any("overflowed" in m for m in messages(at))


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
    at = open_lesson("recurrent", "the cat sat on the mat", rc_weights="constructed")
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
    at = open_lesson("recurrent", **query)
    _no_failure(at)
    assert chart_keys(at) >= CHARTS
    assert all(_all_finite(spec) for spec in every_chart(at))
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
    assert any("cannot repair" in c.value for c in at.caption)


def test_theory_line_is_drawn_dashed_over_the_measured_line():
    at = open_lesson("recurrent", rc_source="synthetic", rc_length="80", rc_radius="0.8")
    _no_failure(at)
    measured, formula, _ = chart(at, "rc_theory")["data"]
    assert formula["line"]["dash"] == "dash" and measured["line"]["dash"] == "solid"
    k, y = _array(formula["x"]), _array(formula["y"])
    np.testing.assert_allclose(y, 0.8**k, rtol=1e-12)
    np.testing.assert_allclose(_array(measured["y"]), y, rtol=1e-4)


def test_clipping_lowers_the_total_but_not_the_early_share():
    at = open_lesson("recurrent", rc_source="synthetic", rc_length="100", rc_clip="0.01")
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
    assert "τ = 511" in " ".join(messages(at))
