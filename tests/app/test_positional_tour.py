"""The positional lesson's tour, driven as a learner drives it: a step opened from its link,
a question answered, the chart it held back read, and the engine's verdict checked against
what that chart draws. The answer is never on the page before the learner gives one."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import APP_TIMEOUT, ROOT, chart, messages, plotly_array
from streamlit.testing.v1 import AppTest

from components.i18n import t
from components.tours.schema import STEP_KEY, TOUR_KEY, tours

TOUR = tours()["positional"]


def _step_of(part: str, probe: str) -> int:
    """The step (from 1) that opens `part` and asks with `probe` or checks with it."""
    for number, step in enumerate(TOUR.steps, start=1):
        asks = step.question.probe if step.question else ""
        checks = step.task.check if step.task else ""
        if step.part == part and probe in (asks, checks):
            return number
    raise AssertionError(f"no step of {part} with {probe}")


def _open(step: int, sentence: str | None = None) -> AppTest:
    """The step's link opened afresh; then, if given, `sentence` typed into the box."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({"lang": "en", TOUR_KEY: "positional", STEP_KEY: str(step)})
    at.run()
    if sentence is not None:
        at.text_input(key="sentence").set_value(sentence).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _panel(at: AppTest) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


def _drawn(at: AppTest) -> set[str]:
    """The keys of the charts on the page: plotly figures and grid charts."""
    grids = [el for el in at.get("bidi_component") if el.proto.component_name == "seqlens_grid"]
    return {el.proto.id.rsplit("-", 1)[-1] for el in [*at.get("plotly_chart"), *grids]}


def _answer(at: AppTest, step: int, value) -> AppTest:
    key = f"tour_answer_positional_{step - 1}"
    widget = at.radio(key=key) if isinstance(value, int) else at.number_input(key=key)
    widget.set_value(value)
    return at.button(key="tour_check").click().run()


def _verdict(at: AppTest) -> bool:
    right, wrong = [s.value for s in at.success], [e.value for e in at.error]
    assert len(right) + len(wrong) == 1, (right, wrong)
    return bool(right)


def _again(at: AppTest) -> AppTest:
    return at.button(key="tour_ask_again").click().run()


def test_the_rope_question_is_judged_by_the_grid_it_held_back():
    step = _step_of("rope", "positional.rope_same_offset")
    at = _open(step)
    assert "pe_rope_grid" not in _drawn(at), "the grid waits for the prediction"
    assert t("tour.answer_first") in messages(at)
    assert "pe_rope_decay" in _drawn(at)  # the rest of the part is drawn
    # Wrong on purpose: "larger for the later pair".
    at = _answer(at, step, 1)
    grid = chart(at, "pe_rope_grid")["data"][0]
    scores = np.asarray(plotly_array(grid["z"]), dtype=float).reshape(len(grid["y"]), -1)
    positions = [int(p) for p in plotly_array(grid["x"])]
    params = TOUR.steps[step - 1].question.params
    key, later, offset = params["key"], params["later"], params["offset"]
    first = scores[key + offset, key]
    second = scores[later + offset, later]
    # The chart draws float32: equal up to its rounding means the same score.
    same = abs(first - second) <= 1e-5 * np.abs(scores).max()
    assert same, (first, second)  # RoPE: a function of m − n alone
    assert not _verdict(at)
    assert f"{first:.4f}"[:5] in _panel(at)  # the reveal quotes the grid's scores
    at = _answer(_again(at), step, 0)  # "the same"
    assert _verdict(at)
    assert positions[0] == 0  # the step set the shift to 0


def test_the_number_question_is_judged_by_the_similarity_curve_at_offset_zero():
    step = _step_of("sinusoidal", "positional.self_similarity")
    at = _open(step)
    drawn = _drawn(at)
    assert not drawn & {"pe_similarity_sinusoidal", "pe_similarity_learned"}
    assert "pe_rotation_matrix" in drawn
    at = _answer(at, step, 64.0)  # d_model: the square of nothing
    assert not _verdict(at)
    curve = chart(at, "pe_similarity_sinusoidal")["data"][0]
    at_zero = float(plotly_array(curve["y"])[list(plotly_array(curve["x"])).index(0)])
    assert at_zero == pytest.approx(32.0)
    at = _answer(_again(at), step, at_zero)
    assert _verdict(at)


def test_the_reordering_question_is_judged_by_the_lowest_bar_it_held_back():
    step = _step_of("sentence", "positional.blind_to_reorder")
    at = _open(step, sentence="dog bites man in the park")
    assert not _drawn(at) & {"pe_order_max", "pe_order_tokens"}
    assert not at.dataframe, "the classic pairs show the same blindness: they wait too"
    assert "pe_heatmap" in _drawn(at)
    at = _answer(at, step, 0)  # sinusoidal
    bars = chart(at, "pe_order_max")["data"][0]
    heights = dict(zip(bars["x"], plotly_array(bars["y"]), strict=True))
    options = [t(f"positional.scheme.{s}") for s in ("sinusoidal", "learned", "rope", "alibi")]
    lowest = min(options, key=lambda name: heights[name])
    assert _verdict(at) == (lowest == options[0])
    at = _answer(_again(at), step, options.index(lowest))
    assert _verdict(at)
    assert f"**{lowest}**" in _panel(at)
    assert at.dataframe  # answered: the pairs are back


def test_the_trained_question_is_judged_by_the_heads_curve_after_training():
    step = _step_of("trained", "positional.trained_peak")
    at = _open(step)
    assert not _drawn(at) & {"pe_trained_after", "pe_trained_offset"}
    at = _answer(at, step, 7.0)
    head = int(at.slider(key="pe_trained_head").value)
    curve = chart(at, "pe_trained_offset")["data"][head]
    peak = int(np.asarray(plotly_array(curve["x"]))[np.argmax(plotly_array(curve["y"]))])
    assert _verdict(at) == (peak == 7)
    at = _answer(_again(at), step, float(peak))
    assert _verdict(at)


def test_the_shift_task_is_done_only_once_the_shift_passes_1000():
    step = _step_of("rope", "positional.rope_shifted_far")
    at = _open(step)
    assert "⬜" in _panel(at) and "✅" not in _panel(at)
    at.slider(key="pe_shift").set_value(900).run()
    assert "⬜" in _panel(at)
    at.slider(key="pe_shift").set_value(1500).run()
    assert "✅" in _panel(at), _panel(at)
    assert "1500" in _panel(at)  # the step's text quotes the live shift


def test_the_first_steps_quoted_token_count_follows_the_sentence():
    at = _open(1, sentence="dog bites man")
    assert "makes 3 tokens" in _panel(at)
    at.text_input(key="sentence").set_value("the cat sat on the mat today").run()
    assert "makes 7 tokens" in _panel(at)
