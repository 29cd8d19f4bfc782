"""Every lesson's first view in Chromium at 1400×1000, as a new learner meets it: its first
chart starts in view without scrolling, and is drawn again on the sentence the learner types
(the masks and recurrent lessons included, whose first views once showed a task's own
sequence)."""

from __future__ import annotations

import pytest
from browser_helpers import (
    ANY_CHART,
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    assert_page_healthy,
    screenshot,
    wait_until_drawn,
    wait_until_idle,
)

from components.lessons import LESSONS

TYPED = "My cat sat on the warm laptop because it was tired"
SCREEN = {"width": 1400, "height": 1000}

# What the first chart in the main area draws: a plotly chart's traces (their x, y, z and
# hover texts), a grid chart's column labels and the summary it is read out with.
_FIRST_CHART = f"""() => {{
    const chart = document.querySelector('[data-testid="stMain"]')
        .querySelector('{ANY_CHART}');
    if (!chart) return null;
    const top = chart.getBoundingClientRect().top;
    const grid = chart.matches('.seqlens-grid') ? chart : null;
    if (grid) {{
        const canvas = grid.querySelector('canvas');
        const label = canvas ? canvas.getAttribute('aria-label') : '';
        return {{top, drawn: (grid.dataset.columns || '') + label}};
    }}
    const plot = chart.querySelector('.js-plotly-plot');
    const data = plot && plot.data ? plot.data.map((trace) =>
        JSON.stringify([trace.x, trace.y, trace.z, trace.text, trace.customdata])) : [];
    return {{top, drawn: data.join('|')}};
}}"""


@pytest.mark.parametrize("lesson", [lesson.url_path for lesson in LESSONS])
def test_a_lessons_first_chart_is_in_view_and_follows_the_typed_sentence(page, app_server, lesson):
    page.set_viewport_size(SCREEN)
    page.goto(f"{app_server}/{lesson}")
    wait_until_drawn(page)
    before = page.evaluate(_FIRST_CHART)
    assert before is not None, "the lesson opens on a chart"
    assert 0 < before["top"] < SCREEN["height"] - 150, before["top"]
    screenshot(page, f"first-view-{lesson}")

    page.locator(SENTENCE_INPUT).click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(TYPED, delay=15)
    page.wait_for_function(
        f"(old) => {{ const now = ({_FIRST_CHART})(); return now && now.drawn !== old; }}",
        arg=before["drawn"],
        timeout=RERUN_TIMEOUT_MS,
    )
    wait_until_idle(page)
    assert_page_healthy(page)
    screenshot(page, f"first-view-{lesson}-typed")
