"""The recurrent lesson's tour, step by step through its links, as a learner does it: the
explode task is done only when it was done, a question holds its chart back, and its answer
is the one computed here apart from the app."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import APP_TIMEOUT, ROOT, chart, chart_keys, messages, plotly_array
from streamlit.testing.v1 import AppTest

from components.i18n import t
from models.analysis import gradient_flow as gf
from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.tokenizer import MAX_TOKENS, Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

SENTENCE = "My cat sat on the warm laptop because it was tired"
ANSWER_FIRST = t("tour.answer_first", language="en")
TASK_STEP, FIRST_QUESTION, NUMBER_QUESTION = 5, 1, 3


def _step(step: int, **query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({"lang": "en", "tour": "recurrent", "step": str(step), **query})
    at.run()
    at.text_input(key="sentence").set_value(SENTENCE).run()
    _no_failure(at)
    return at


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    failed = (t("app.error", language="en"), t("tour.failed", language="en"))
    assert not [m for m in messages(at) if m in failed], messages(at)


def _task_done(at) -> bool:
    lines = [m.value for m in at.sidebar.markdown if "**Your turn:**" in m.value]
    assert len(lines) == 1, [m.value for m in at.sidebar.markdown]
    return lines[0].startswith("✅")


def _your_rnn(at) -> np.ndarray:
    lines = {line["name"]: line for line in chart(at, "rc_theory")["data"]}
    return plotly_array(lines["your RNN (measured)"]["y"]).astype(np.float64)


def test_the_explode_task_is_done_only_with_r_above_the_bar_and_a_growing_line():
    at = _step(TASK_STEP)
    assert at.selectbox(key="rc_act").value == "linear"
    assert at.selectbox(key="rc_init").value == "orthogonal"
    assert at.slider(key="rc_radius").value == 0.95
    assert not _task_done(at)  # the control as the step left it: the line falls as 0.95^k
    line = _your_rnn(at)
    np.testing.assert_allclose(line, 0.95 ** np.arange(len(line)), rtol=1e-4)
    at.slider(key="rc_radius").set_value(1.0).run()
    assert not _task_done(at), "a flat line does not grow"
    at.slider(key="rc_radius").set_value(1.1).run()
    assert not _task_done(at), "at the bar is not above it"
    at.slider(key="rc_radius").set_value(1.2).run()
    _no_failure(at)
    assert _task_done(at)
    assert t("tour.task_done", language="en") in [c.value for c in at.sidebar.caption]
    # The line the check read: a linear orthogonal RNN keeps r^k of the gradient.
    line = _your_rnn(at)
    np.testing.assert_allclose(line, 1.2 ** np.arange(len(line)), rtol=1e-4)
    # r stays at 1.2, but with tanh and a random W_hh the gradient vanishes: not done.
    at.selectbox(key="rc_act").set_value("tanh").run()
    at.selectbox(key="rc_init").set_value("random").run()
    _no_failure(at)
    assert at.slider(key="rc_radius").value == 1.2
    line = _your_rnn(at)
    assert line[-1] < line[0]
    assert not _task_done(at)
    # Trained weights: the slider still says 1.2, but the trained RNN sets its own r.
    at.selectbox(key="rc_act").set_value("linear").run()
    at.selectbox(key="rc_init").set_value("orthogonal").run()
    assert _task_done(at)
    # The browser's address bar follows a bound control; AppTest's stays as it was opened.
    at.query_params["rc_radius"] = "1.2"
    at.selectbox(key="rc_weights").set_value("copy-lag20").run()
    _no_failure(at)
    assert at.slider(key="rc_radius").value == 1.2 and at.slider(key="rc_radius").disabled
    lines = {line["name"]: line for line in chart(at, "rc_theory")["data"]}
    trained = plotly_array(lines["trained RNN (measured)"]["y"])
    assert "your RNN (measured)" not in lines and trained[-1] < trained[0]
    assert not _task_done(at)


def _rnn_gradient_at_inputs(sentence: str) -> np.ndarray:
    """‖∂L/∂X_t‖ of the lesson's constructed RNN on `sentence`, against k, built here from
    the tokenizer, the Transformer's token vectors and the default controls."""
    tokenizer = Tokenizer()
    ids = tokenizer.encode(sentence, MAX_TOKENS).ids
    X = Transformer(TransformerConfig(d_vocab=tokenizer.vocab_size)).W_E[list(ids)].detach()
    rnn = Recurrent(RecurrentConfig(cell="rnn", num_inputs=64, num_hiddens=64))
    tau = len(ids) - 1
    return gf.recurrent_gradient_flow(rnn, X, tau)["grad_X"][tau::-1].astype(np.float64)


def test_the_first_question_holds_the_distance_chart_back_until_answered():
    at = _step(FIRST_QUESTION)
    assert "rc_distance" not in chart_keys(at) and ANSWER_FIRST in messages(at)
    assert not any(c.value.startswith("Backpropagation through time") for c in at.caption)
    expected = _rnn_gradient_at_inputs(SENTENCE)
    right = 0 if expected[-1] > expected[0] else 1  # the file's options: larger, smaller
    at.radio(key="tour_answer_recurrent_0").set_value(1 - right)
    at.button(key="tour_check").click().run()
    _no_failure(at)
    assert at.error and not at.success  # the wrong one, marked wrong
    assert "rc_distance" in chart_keys(at) and ANSWER_FIRST not in messages(at)
    rnn = {d["name"]: d for d in chart(at, "rc_distance")["data"]}["RNN"]
    np.testing.assert_allclose(plotly_array(rnn["y"]), expected, rtol=1e-5)
    at.button(key="tour_ask_again").click().run()
    at.radio(key="tour_answer_recurrent_0").set_value(right)
    at.button(key="tour_check").click().run()
    assert at.success and not at.error


@pytest.mark.parametrize(("given", "right"), [(0.9**10, True), (0.9, False)])
def test_the_number_question_takes_r_to_the_k_as_right(given, right):
    at = _step(NUMBER_QUESTION)
    assert at.slider(key="rc_radius").value == 0.9
    assert "rc_theory" not in chart_keys(at) and ANSWER_FIRST in messages(at)
    at.number_input(key="tour_answer_recurrent_2").set_value(given)
    at.button(key="tour_check").click().run()
    _no_failure(at)
    assert bool(at.success) is right and bool(at.error) is not right
    assert f"{0.9**10:.4g}" in "\n".join(m.value for m in at.sidebar.markdown)
    assert "rc_theory" in chart_keys(at)
