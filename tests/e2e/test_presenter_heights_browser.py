"""Presenter mode on a 1920×1080 projector, in a real browser: on every part of every
lesson, every chart (plotly or grid) is measured as drawn, and none is taller than the
screen. The tallest chart of each part is scrolled to just under the page's top bar, where
it must be all in view, and saved as a screenshot
(tests/artifacts/presenter-heights-<lesson>-<part>.png, git-ignored).

Bounded: one page per part (20 in all), each waited for at most the first-chart timeout.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser_helpers import (
    ANY_CHART,
    FIRST_CHART_TIMEOUT_MS,
    assert_page_healthy,
    screenshot,
    wait_for_charts,
    wait_until_idle,
)

from components.lessons import LESSONS
from components.projector import MAX_HEIGHT, TOP_BAR

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

SCREEN = {"width": 1920, "height": 1080}
# Long enough that every chart drawn per token has many rows.
SENTENCE = (
    "The old lighthouse keeper watched the storm roll in from the sea while his daughter "
    "counted the ships that were still out past the harbour wall"
)
# Each chart's height as the page lays it out, with its key (the st-key-… class of the
# element that holds it).
_HEIGHTS = """(sel) => [...document.querySelectorAll(sel)].map(chart => {
    const holder = chart.closest('[class*="st-key-"]');
    const key = holder ? [...holder.classList].find(c => c.startsWith('st-key-')) : '?';
    return [key.replace('st-key-', ''), chart.getBoundingClientRect().height];
})"""


def open_part(page, base_url: str, lesson, part: str) -> None:
    page.goto(
        f"{base_url}/{lesson.url_path}?present=1&{lesson.part_key}={part}"
        f"&sentence={quote(SENTENCE)}"
    )
    # Every part draws at least one chart; its run may start after the page has loaded.
    wait_for_charts(page)
    wait_until_idle(page)
    wait_for_charts(page)
    assert_page_healthy(page)


_BAR_BOTTOM = """() => document.querySelector('[data-testid="stHeader"]')
    .getBoundingClientRect().bottom"""


# Scroll the chart's top to just under the page's top bar, as a presenter would.
_UNDER_THE_BAR = """(key) => {
    const chart = document.querySelector(`.st-key-${key}`);
    const bar = document.querySelector('[data-testid="stHeader"]');
    let node = chart.parentElement;
    while (node && !(node.scrollHeight > node.clientHeight
                     && /(auto|scroll)/.test(getComputedStyle(node).overflowY))) {
        node = node.parentElement;
    }
    const below = bar ? bar.getBoundingClientRect().bottom : 0;
    (node || document.scrollingElement).scrollBy(0, chart.getBoundingClientRect().top - below);
    const box = chart.getBoundingClientRect();
    return [box.top - below, innerHeight - box.bottom];
}"""


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path)
def test_no_chart_is_taller_than_the_projectors_screen(browser, app_server, lesson):
    context = browser.new_context(viewport=SCREEN)
    context.set_default_timeout(FIRST_CHART_TIMEOUT_MS)
    measured = []
    try:
        page = context.new_page()
        for part in lesson.parts:
            open_part(page, app_server, lesson, part)
            heights = page.evaluate(_HEIGHTS, ANY_CHART)
            measured += [(part, key, height) for key, height in heights]
            # The ceiling the charts are drawn to leaves room for the bar as laid out.
            bar = page.evaluate(_BAR_BOTTOM)
            assert 0 < bar <= TOP_BAR and SCREEN["height"] >= MAX_HEIGHT + TOP_BAR, bar
            too_tall = [(key, height) for key, height in heights if height > SCREEN["height"]]
            assert too_tall == [], (lesson.url_path, part, too_tall)
            # The tallest, scrolled under the top bar, is all in view there.
            key, _ = max(heights, key=lambda kh: kh[1])
            top_gap, bottom_gap = page.evaluate(_UNDER_THE_BAR, key)
            # (At the page's end it may stop lower down, still all in view.)
            assert top_gap >= -1 and bottom_gap >= -1, (part, key, top_gap, bottom_gap)
            screenshot(page, f"presenter-heights-{lesson.url_path}-{part}")
        print(lesson.url_path, sorted(measured, key=lambda m: -m[2])[:5])
        assert measured, f"{lesson.url_path} drew no chart in presenter mode"
        assert all(height > 0 for _, _, height in measured)
    finally:
        context.close()
