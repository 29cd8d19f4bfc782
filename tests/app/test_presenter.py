"""Presenter mode: from the link (?present=1) or the switch, on every page, in the frame.

What it looks like (large text, no sidebar, one chart per screen) is checked in the
browser (tests/e2e/test_classroom.py); here: state, the style sheet, the link's note.
"""

from __future__ import annotations

import pytest
from conftest import chart_specs, every_tab, grid_specs, messages, open_home, open_lesson
from streamlit.testing.v1 import AppTest

from components.grid import SAVE_BAR_PX
from components.projector import MAX_HEIGHT, SCALE, SCREEN_HEIGHT
from components.ui.frame import LAYOUT_CSS, PRESENTER_CSS
from models.text import MAX_CHARS

TOGGLE = "_present_toggle"
PRESENTER_RULE = PRESENTER_CSS.read_text(encoding="utf-8").split("*/")[0]


def style_sheets(at: AppTest) -> list[str]:
    return [el.proto.body for el in at.get("html")]


def presenting(at: AppTest) -> bool:
    return any(PRESENTER_RULE in body for body in style_sheets(at))


@pytest.mark.parametrize("spelling", ["1", "true", "YES", "on"])
def test_a_link_turns_presenter_mode_on(spelling):
    at = open_home(present=spelling)
    assert at.toggle(key=TOGGLE).value is True
    assert presenting(at)
    assert at.query_params["present"] in ("1", ["1"])  # the link keeps one spelling


@pytest.mark.parametrize("spelling", ["0", "off", "false"])
def test_a_link_can_say_off(spelling):
    at = open_home(present=spelling)
    assert at.toggle(key=TOGGLE).value is False
    assert not presenting(at)
    assert not [m for m in messages(at) if m.startswith("The link")]


def test_a_bad_value_in_the_link_gets_a_note_and_the_normal_view():
    at = open_home(present="<script>")
    assert at.toggle(key=TOGGLE).value is False
    assert not presenting(at)
    assert any(m.startswith("The link") for m in messages(at))
    assert "<script>" in [el.value for el in at.text]  # quoted as plain text


def test_without_a_link_the_page_is_normal_and_the_layout_sheet_is_always_there():
    at = open_home()
    assert at.toggle(key=TOGGLE).value is False
    assert not presenting(at)
    layout = LAYOUT_CSS.read_text(encoding="utf-8").split("*/")[0]
    assert any(layout in body for body in style_sheets(at))


def heights_and_fonts(at: AppTest) -> list[tuple[str, float, float]]:
    plotly = [
        ("plotly", spec["layout"]["height"], spec["layout"].get("font", {}).get("size", 12))
        for spec in chart_specs(at)
    ]
    return plotly + [("grid", spec["height"], spec["font"]) for spec in grid_specs(at)]


# The tallest each kind of chart may be drawn for the projector: a grid chart's save bar
# sits above its canvas, inside the chart.
CEILING = {"plotly": MAX_HEIGHT, "grid": MAX_HEIGHT - SAVE_BAR_PX}


def test_every_lesson_draws_in_presenter_mode_and_switches_back(lesson_path):
    """Charts are drawn for the projector, half as large again (components/projector.py),
    but never taller than the projector's screen, and back to their own size after."""
    at = open_lesson(lesson_path, "The cat sat on the mat")
    normal = heights_and_fonts(at)
    at.toggle(key=TOGGLE).set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert presenting(at)
    projected = heights_and_fonts(at)
    assert len(projected) == len(normal) > 0
    for (kind, height, font), (_, big_height, big_font) in zip(normal, projected, strict=True):
        assert big_height == min(round(height * SCALE), CEILING[kind])
        assert big_font == font * SCALE
    at.toggle(key=TOGGLE).set_value(False).run()
    assert not presenting(at)
    assert heights_and_fonts(at) == normal


# The longest sentence a lesson reads: as many characters as the sentence box keeps, in
# words that are one token each for every tokenizer the lessons use (so the most tokens).
LONGEST = " ".join(["the cat sat on a mat"] * (MAX_CHARS // 21 + 1))[:MAX_CHARS]


def test_on_the_longest_sentence_no_chart_is_taller_than_the_projectors_screen(lesson_path):
    """Every chart of every tab, drawn for the projector, fits a 1080-px screen under the
    page's top bar (the browser measures the same, tests/e2e/test_presenter_heights_browser.py)."""
    seen = 0
    for at in every_tab(lesson_path, LONGEST, present="1"):
        assert not at.exception, [e.value for e in at.exception]
        assert presenting(at)
        for kind, height, _ in heights_and_fonts(at):
            seen += 1
            assert height <= CEILING[kind] < SCREEN_HEIGHT, (kind, height)
    assert seen > 0


def test_the_summary_under_a_chart_is_body_text_in_presenter_mode():
    """On a screen the line under a chart is a caption; on the projector, body text."""
    at = open_lesson("heads", "The cat sat on the mat")
    projected = open_lesson("heads", "The cat sat on the mat", present="1")
    shown = {c.value for c in projected.caption}
    summaries = {c.value for c in at.caption} - shown
    # The lesson's first view draws four charts, each with its own line.
    assert len(summaries) >= 3, summaries
    assert summaries <= {m.value for m in projected.markdown}
