"""SeqLens in front of a class, in a real browser: every page in both languages, in
presenter mode and at tablet width, saved as screenshots (tests/artifacts/, git-ignored);
every control reachable with the Tab key.

The pages come from components.lessons.LESSONS, so a new lesson is held to this too.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from browser_helpers import (
    ANY_CHART,
    HEADS_GRID_KEYS,
    assert_page_healthy,
    expect,
    screenshot,
    wait_for_charts,
    wait_for_grids,
    wait_until_idle,
)

from components.i18n import strings
from components.lessons import LESSONS

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

PAGES = ["", *(lesson.url_path for lesson in LESSONS)]  # "" is home
TITLE_KEYS = {
    "": "home.title",
    **{lesson.url_path: f"{lesson.url_path}.title" for lesson in LESSONS},
}
SIDEBAR = '[data-testid="stSidebar"]'
TABLET = {"width": 800, "height": 1100}
PROJECTOR = {"width": 1280, "height": 720}
# Every kind of control a lesson draws, by the data-testid of its container.
CONTROLS = (
    "stTextInput",
    "stSelectbox",
    "stSlider",
    "stMultiSelect",
    "stButtonGroup",
    "stCheckbox",
    "stButton",
    "stDownloadButton",
    "stPageLink",
)


def open_page(page, base_url: str, path: str, **query: str) -> None:
    query_string = "&".join(f"{k}={v}" for k, v in query.items())
    page.goto(f"{base_url}/{path}" + (f"?{query_string}" if query_string else ""))
    heading = strings(query.get("lang", "en"))[TITLE_KEYS[path]]
    expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=90_000)
    if path:
        wait_for_charts(page)
    if path == "heads":
        # Its charts are grid charts (assets/grid_chart.js): all four drawn.
        wait_for_grids(page, HEADS_GRID_KEYS)
    wait_until_idle(page)
    assert_page_healthy(page)


def page_name(path: str) -> str:
    return path or "home"


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_every_page_in_both_languages_normal_and_presenting(browser, app_server, path, language):
    normal = browser.new_context(viewport={"width": 1400, "height": 1000})
    projector = browser.new_context(viewport=PROJECTOR)
    try:
        page = normal.new_page()
        open_page(page, app_server, path, lang=language)
        expect(page.locator(SIDEBAR)).to_be_visible()
        screenshot(page, f"classroom-{page_name(path)}-{language}")

        page = projector.new_page()
        open_page(page, app_server, path, lang=language, present="1")
        # The sidebar is gone, the page menu sits along the top, the text is larger,
        # and the link still says present=1 (a teacher can share it as it is).
        expect(page.locator(SIDEBAR)).to_be_hidden()
        nav_title = strings(language)["nav.home"]
        expect(page.get_by_role("link", name=nav_title).first).to_be_visible()
        page.wait_for_function(
            "() => parseFloat(getComputedStyle(document.documentElement).fontSize) >= 20",
            timeout=10_000,
        )
        assert parse_qs(urlsplit(page.url).query).get("present") == ["1"]
        if path:
            # One chart per screen: no two charts side by side (plotly's or grids).
            lefts = page.eval_on_selector_all(
                ANY_CHART, "els => els.map(e => Math.round(e.getBoundingClientRect().left))"
            )
            assert len(set(lefts)) == 1, lefts
        screenshot(page, f"classroom-{page_name(path)}-{language}-presenter")
    finally:
        normal.close()
        projector.close()


@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_every_page_fits_a_tablet(browser, app_server, path):
    context = browser.new_context(viewport=TABLET)
    try:
        page = context.new_page()
        open_page(page, app_server, path)
        # Nothing wider than the screen: no sideways scrolling.
        overflow = page.evaluate(
            """() => { const main = document.querySelector('[data-testid="stMain"]');
                       return main.scrollWidth - main.clientWidth; }"""
        )
        assert overflow <= 1
        screenshot(page, f"classroom-{page_name(path)}-tablet")
    finally:
        context.close()


FOCUSED_CONTROL = """(kinds) => {
    let node = document.activeElement;
    while (node && node !== document.body) {
        const id = node.getAttribute && node.getAttribute('data-testid');
        if (kinds.includes(id)) {
            const all = [...document.querySelectorAll(`[data-testid="${id}"]`)];
            return `${id}#${all.indexOf(node)}`;
        }
        node = node.parentElement;
    }
    return null;
}"""

# Every enabled control on the page (the sidebar's too), named as FOCUSED_CONTROL names it.
ALL_CONTROLS = """(kinds) => kinds.flatMap(id => {
    const all = [...document.querySelectorAll(`[data-testid="${id}"]`)];
    return all
        .filter(el => !el.querySelector('[disabled], [aria-disabled="true"]')
                      && !el.matches('[disabled], [aria-disabled="true"]'))
        .map(el => `${id}#${all.indexOf(el)}`);
})"""


@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_every_control_is_reachable_with_the_tab_key(page, app_server, path):
    open_page(page, app_server, path)
    # The sentence box at least: the frame draws it on every page.
    page.wait_for_function(
        f"(kinds) => ({ALL_CONTROLS})(kinds).includes('stTextInput#0')", arg=list(CONTROLS)
    )
    wanted = set(page.evaluate(ALL_CONTROLS, list(CONTROLS)))
    reached: set[str] = set()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    for _ in range(600):
        page.keyboard.press("Tab")
        control = page.evaluate(FOCUSED_CONTROL, list(CONTROLS))
        if control:
            reached.add(control)
        if wanted <= reached:
            break
    # Judged on the controls enabled now: one the page disables while it settles (a slider
    # that only one mask kind uses) is out of the Tab order by design.
    wanted &= set(page.evaluate(ALL_CONTROLS, list(CONTROLS)))
    assert sorted(wanted - reached) == []
