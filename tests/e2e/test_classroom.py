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
    # Exact: home's "The road from n-grams to GPT" holds its title as a part.
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=90_000)
    if path:
        wait_for_charts(page)
    if path == "heads":
        # Its charts are grid charts (assets/grid_chart.js): all four drawn.
        wait_for_grids(page, HEADS_GRID_KEYS)
    wait_until_idle(page)
    assert_page_healthy(page)


def page_name(path: str) -> str:
    return path or "home"


# Each chart's left edge, with the place it sits in: -1 the page, i the i-th expander.
CHART_LEFTS = """els => {
    const expanders = [...document.querySelectorAll('[data-testid="stExpander"]')];
    return els.map(e => [expanders.indexOf(e.closest('[data-testid="stExpander"]')),
                         Math.round(e.getBoundingClientRect().left)]);
}"""


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
            # One chart per screen: no two charts side by side (plotly's or grids). A chart
            # in an expander sits indented by the expander's border, so each expander's
            # charts share one left edge of their own, and the page's charts another.
            lefts = page.eval_on_selector_all(ANY_CHART, CHART_LEFTS)
            columns: dict[int, set[int]] = {}
            for place, left in lefts:
                columns.setdefault(place, set()).add(left)
            assert all(len(edges) == 1 for edges in columns.values()), lefts
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


# An expander is reached by its header (its <summary>), which opens it; the controls inside
# a collapsed one are hidden, so they are reached once it is opened.
FOCUSED_CONTROL = """(kinds) => {
    let node = document.activeElement;
    if (node && node.matches('[data-testid="stExpander"] summary')) {
        const all = [...document.querySelectorAll('[data-testid="stExpander"]')];
        return `stExpander#${all.indexOf(node.closest('[data-testid="stExpander"]'))}`;
    }
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

# Every enabled control a learner can see (the sidebar's too), and every expander's header,
# named as FOCUSED_CONTROL names them.
ALL_CONTROLS = """(kinds) => [...kinds, 'stExpander'].flatMap(id => {
    const all = [...document.querySelectorAll(`[data-testid="${id}"]`)];
    return all
        .filter(el => el.checkVisibility({visibilityProperty: true}) && (id === 'stExpander'
            ? !!el.querySelector('summary')
            : !el.querySelector('[disabled], [aria-disabled="true"]')
              && !el.matches('[disabled], [aria-disabled="true"]')))
        .map(el => `${id}#${all.indexOf(el)}`);
})"""

# Every expander's header that is still collapsed.
CLOSED_EXPANDERS = '[data-testid="stExpander"] details:not([open]) > summary'


def tab_through(page) -> tuple[set[str], set[str]]:
    """Press Tab from the top until every control a learner can see is reached (or 600
    presses); what was wanted and what was reached, judged on the controls enabled then."""
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
    return wanted, reached


@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_every_control_is_reachable_with_the_tab_key(page, app_server, path):
    open_page(page, app_server, path)
    # The sentence box at least: the frame draws it on every page.
    page.locator('[data-testid="stMain"] [data-testid="stTextInput"]').first.wait_for()
    wanted, reached = tab_through(page)
    assert sorted(wanted - reached) == []

    # Every expander opened, as a learner opens one: the controls it held are reached too.
    for _ in range(50):
        closed = page.locator(CLOSED_EXPANDERS)
        if closed.count() == 0:
            break
        closed.first.click()
        wait_until_idle(page)
    expect(page.locator(CLOSED_EXPANDERS)).to_have_count(0)
    wanted, reached = tab_through(page)
    assert sorted(wanted - reached) == []
