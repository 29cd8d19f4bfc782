"""The masks tour, each step opened from its link: the numbers its text quotes are the ones
its charts draw, its questions' charts wait for an answer, and the answer revealed is the
number the chart then draws."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import APP_TIMEOUT, ROOT, chart, heatmap_grid, messages, plotly_array
from streamlit.testing.v1 import AppTest

from components.i18n import t
from components.tours.schema import tours

TOUR = tours()["masks"]
SENTENCE = "my cat sat on the warm laptop"


def _step(number: int, sentence: str = SENTENCE, language: str = "en") -> AppTest:
    """The step's link opened, then the sentence typed, as a learner does."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({"lang": language, "tour": "masks", "step": str(number)})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="sentence").set_value(sentence).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _panel(at: AppTest) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown).replace("\\", "")


def _chart_keys(at: AppTest) -> set[str]:
    return {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}


def _answer(at: AppTest, number: int, value: float) -> AppTest:
    at.number_input(key=f"tour_answer_masks_{number - 1}").set_value(value)
    return at.button(key="tour_check").click().run()


def test_the_tour_has_five_to_nine_steps_two_questions_and_a_task():
    assert 5 <= len(TOUR.steps) <= 9
    assert sum(step.question is not None for step in TOUR.steps) >= 2
    assert any(step.task is not None for step in TOUR.steps)


def test_the_quoted_scores_are_the_ones_the_scale_step_draws():
    at = _step(3)
    before, after = (plotly_array(tr["y"]) for tr in chart(at, "mask_row")["data"])
    top = int(np.argmax(before))
    assert f"Its highest score, {before[top]:.2f} with '" in _panel(at)
    assert f"√d_k = {math.sqrt(16):.2f} and becomes {after[top]:.2f}" in _panel(at)
    labels = chart(at, "mask_row")["data"][0]["x"]
    assert f"with '{labels[top].split(':', 1)[1]}'" in _panel(at)


def test_the_task_is_done_only_once_nothing_is_masked():
    at = _step(4)
    done = "✅ **" + t("tour.task")  # the task's mark: ⬜ until the live chart shows it
    masked = chart(at, "mask_row")["data"][0]["text"].count("−∞")
    assert masked == len(SENTENCE) - 2  # query 1 sees keys 0 and 1
    assert f"the {masked} of {len(SENTENCE)} keys" in _panel(at)
    assert done not in _panel(at)
    at.session_state["mask_kind"] = "window"  # still masks some keys: not done
    at.run()
    assert chart(at, "mask_row")["data"][0]["text"].count("−∞") > 0
    assert done not in _panel(at)
    at.session_state["mask_kind"] = "none"
    at.run()
    assert chart(at, "mask_row")["data"][0]["text"].count("−∞") == 0
    assert done in _panel(at)


def test_the_softmax_question_hides_its_chart_and_reveals_the_weight_it_draws():
    at = _step(5)
    assert "mask_row" not in _chart_keys(at)
    assert "mask_step_hook_pattern" not in _chart_keys(at)
    assert t("tour.answer_first") in messages(at)
    assert "The chart gives" not in _panel(at)
    assert "After the causal mask, what weight does 'y' give to the next character, '␣'?" in (
        _panel(at)
    )
    at = _answer(at, 5, 0.5)
    assert at.error and not at.success
    weights = plotly_array(chart(at, "mask_row")["data"][0]["y"])
    pattern = heatmap_grid(chart(at, "mask_step_hook_pattern")["data"][0]["z"])
    assert weights[2] == 0 and np.isnan(pattern[1, 2])  # masked: drawn as 0, hidden cell
    revealed = re.search(r"The chart gives (\S+)\. Under the causal mask", _panel(at))
    assert revealed and float(revealed.group(1)) == weights[2]


def test_the_kv_question_hides_the_cost_chart_and_its_answer_is_the_20th_step_it_draws():
    at = _step(8)
    assert "kv_macs" not in _chart_keys(at) and "kv_time" in _chart_keys(at)
    assert t("tour.answer_first") in messages(at)
    at = _answer(at, 8, 987654.0)
    assert at.error and not at.success
    with_cache = plotly_array(chart(at, "kv_macs")["data"][0]["y"])
    revealed = re.search(r"step 20 costs (\S+) million", _panel(at))
    assert revealed and float(revealed.group(1)) == pytest.approx(with_cache[19], rel=1e-3)
    first = re.search(r"step 1 costs (\S+) million", _panel(at))
    assert first and float(first.group(1)) == pytest.approx(with_cache[0], rel=1e-3)
    at.button(key="tour_ask_again").click().run()
    at = _answer(at, 8, float(with_cache[19]))
    assert at.success and not at.error


def test_a_quoted_number_follows_the_sentence():
    short = _panel(_step(1, "a cat"))
    longer = _panel(_step(1, SENTENCE))
    assert "here 5 characters" in short
    assert f"here {len(SENTENCE)} characters" in longer


def test_every_step_opens_in_chinese_with_its_quotes_filled():
    for number in range(1, len(TOUR.steps) + 1):
        at = _step(number, "我的猫坐在温暖的笔记本电脑上", language="zh")
        assert "{" not in _panel(at), (number, _panel(at))
        assert not any(m == t("tour.failed", language="zh") for m in messages(at))
