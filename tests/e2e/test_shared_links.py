"""Links a teacher shares, and charts on the projector, in a real browser.

A deep link that is the very first visit to a fresh server keeps presenter mode, its
language and its settings through the next change; a hand-typed ?lang=zh stays in the
address bar, so a link copied at once opens in Chinese, and so do choices a link names by
their value (`?tr_task=lm`); in presenter mode, hovering a chart names the cell or point
under the pointer and a drag zooms onto what was framed.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

import pytest
from test_browser import (
    CHART,
    RERUN_TIMEOUT_MS,
    assert_page_healthy,
    screenshot,
    wait_until_drawn,
    wait_until_idle,
)

from components.frame import _language_in_link
from components.i18n import strings

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture skips (or fails in CI) with an install hint
    expect = None

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

ZH = strings("zh")
EN = strings("en")
SIDEBAR = '[data-testid="stSidebar"]'
PRESENTER_TOGGLE = '.st-key-_present_toggle input[type="checkbox"]'
PROJECTOR = {"width": 1280, "height": 800}
SENTENCE = "The animal didn't cross the street because it was too tired"
# Not the default sentence, so the link must carry it.
LINKED_SENTENCE = "Seven purple dolphins sang quietly tonight"


def link_query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def link_language(page) -> str | None:
    """The language the address bar's link names, read as the app reads a link."""
    values = link_query(page).get("lang")
    return _language_in_link(values[-1]) if values else None


def expect_presenting(page) -> None:
    expect(page.locator(PRESENTER_TOGGLE)).to_be_checked()
    expect(page.locator(SIDEBAR)).to_be_hidden()


def choose(page, key: str, option: str) -> None:
    """Pick `option` in the selectbox drawn with `key` (opening its list again if a
    rerun closed it)."""
    for _ in range(3):
        page.locator(f'.st-key-{key} [data-testid="stSelectbox"]').click()
        choice = page.get_by_role("option", name=option, exact=True)
        try:
            choice.wait_for(state="visible", timeout=5_000)
        except Exception:  # the list closed under a rerun: open it again
            page.keyboard.press("Escape")
            wait_until_idle(page)
            continue
        choice.click()
        return
    raise AssertionError(f"option {option!r} of {key!r} never showed")


# ---------------------------------------------------------------- deep links


def test_a_deep_link_as_the_first_visit_keeps_presenter_language_and_settings(
    browser, fresh_app_server
):
    """The lesson file runs alone first on a fresh server (components/frame.py): the
    change that follows must not drop what the link asked for."""
    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(30_000)
    try:
        page = context.new_page()
        query = f"present=1&lang=zh&layer=2&head=5&sentence={quote(LINKED_SENTENCE)}"
        page.goto(f"{fresh_app_server}/heads?{query}")
        wait_until_drawn(page)
        expect(page.get_by_role("heading", name=ZH["heads.title"])).to_be_visible()
        expect(page.get_by_role("heading", name="层 2，头 5")).to_be_visible()
        expect_presenting(page)

        choose(page, "head", "7")
        expect(page.get_by_role("heading", name="层 2，头 7")).to_be_visible(
            timeout=RERUN_TIMEOUT_MS
        )
        page.wait_for_function(
            "() => new URLSearchParams(location.search).get('head') === '7'",
            timeout=RERUN_TIMEOUT_MS,
        )
        wait_until_idle(page)
        # Still presenting, still in Chinese, every other setting still in effect …
        expect_presenting(page)
        expect(page.get_by_role("heading", name=ZH["heads.title"])).to_be_visible()
        expect(page.locator(".st-key-sentence input")).to_have_value(LINKED_SENTENCE)
        # … and all of it still in the link.
        query = link_query(page)
        assert query.get("present") == ["1"], page.url
        assert link_language(page) == "zh", page.url
        assert query.get("layer") == ["2"], page.url
        assert query.get("sentence") == [LINKED_SENTENCE], page.url
        assert urlsplit(page.url).path == "/heads"
        assert_page_healthy(page)
        screenshot(page, "deep-link-first-visit-after-change")
    finally:
        context.close()


def test_a_hand_typed_language_stays_in_the_link_and_a_copy_opens_in_chinese(browser, app_server):
    typed = browser.new_context(viewport={"width": 1400, "height": 1000})
    copied_into = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = typed.new_page()
        page.goto(f"{app_server}/positional?lang=zh")
        expect(page.get_by_role("heading", name=ZH["positional.title"])).to_be_visible(
            timeout=90_000
        )
        wait_until_drawn(page)
        assert link_language(page) == "zh", page.url
        copied = page.url

        fresh = copied_into.new_page()
        fresh.goto(copied)
        expect(fresh.get_by_role("heading", name=ZH["positional.title"])).to_be_visible(
            timeout=90_000
        )
        wait_until_idle(fresh)
        assert link_language(fresh) == "zh", fresh.url
        assert_page_healthy(fresh)
    finally:
        typed.close()
        copied_into.close()


def address_bar_query(page) -> dict[str, list[str]]:
    """The address bar as the browser has it now (history.replaceState included)."""
    return parse_qs(urlsplit(page.evaluate("location.href")).query)


def test_a_link_naming_choices_by_value_keeps_them_in_the_address_bar(browser, app_server):
    """The home table links to `?tr_task=lm`, and teachers type such links by hand:
    the controls show those choices, and the address bar keeps them (as the controls'
    labels), so a link copied at once still opens on them."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{app_server}/training?tr_task=lm&tr_models_lm=lstm&tr_models_lm=transformer")
        expect(page.get_by_role("heading", name=EN["training.title"])).to_be_visible(timeout=90_000)
        wait_until_idle(page)
        query = address_bar_query(page)
        assert query.get("tr_task") == [EN["training.task.lm"]], query
        assert query.get("tr_models_lm") == ["LSTM", "Transformer"], query

        copied = page.evaluate("location.href")
        fresh = context.new_page()
        fresh.goto(copied)
        expect(fresh.get_by_role("heading", name=EN["training.title"])).to_be_visible(
            timeout=90_000
        )
        wait_until_idle(fresh)
        task_box = fresh.locator(".st-key-tr_task").get_by_role("combobox")
        expect(task_box).to_have_value(EN["training.task.lm"], timeout=60_000)
        assert address_bar_query(fresh) == query
        assert_page_healthy(fresh)
    finally:
        context.close()


# ---------------------------------------------------------------- charts on the projector

# Where a data point is drawn on the screen: the plot area as the browser shows it (after
# any scaling of the page), and the point's place along each axis's range.
POINT_ON_SCREEN = """([key, x, y]) => {
    const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const area = gd.querySelector('.nsewdrag').getBoundingClientRect();
    const share = (axis, value) =>
        (axis.c2l(axis.d2c(value)) - axis.range[0]) / (axis.range[1] - axis.range[0]);
    const layout = gd._fullLayout;
    return [area.left + share(layout.xaxis, x) * area.width,
            area.bottom - share(layout.yaxis, y) * area.height];
}"""
HOVER_TEXT = """(key) => [...document.querySelectorAll(`.st-key-${key} .hoverlayer .hovertext`)]
    .map(el => el.textContent).join(' | ')"""
X_RANGE = """(key) => document.querySelector(`.st-key-${key} .js-plotly-plot`)
    ._fullLayout.xaxis.range"""


def hover(page, key: str, x, y) -> str:
    """Move the pointer onto the point (x, y) as drawn; the hover label it brings up."""
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    screen_x, screen_y = page.evaluate(POINT_ON_SCREEN, [key, x, y])
    page.mouse.move(screen_x - 20, screen_y - 20)
    page.mouse.move(screen_x, screen_y, steps=4)
    page.wait_for_function(f"(key) => ({HOVER_TEXT})(key) !== ''", arg=key)
    return page.evaluate(HOVER_TEXT, key)


def points_apart(traces: list[dict]) -> list[tuple[str, float, float]]:
    """(line, x, y) of points no other line comes near at the same x: the pointer on one
    of them has a single point under it. One per line, the lines in order."""
    span = max(max(t["y"]) for t in traces) - min(min(t["y"]) for t in traces)
    found = []
    for trace in traces:
        others = [dict(zip(t["x"], t["y"], strict=True)) for t in traces if t is not trace]
        for x, y in zip(trace["x"], trace["y"], strict=True):
            if all(x not in other or abs(other[x] - y) > 0.1 * span for other in others):
                found.append((trace["name"], x, y))
                break
    return found


@pytest.fixture
def projector(browser):
    """A page in a browser context of its own, at a projector's size."""
    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def open_presenting(page, base_url: str, path: str, **query: str) -> None:
    extra = "".join(f"&{name}={quote(value)}" for name, value in query.items())
    page.goto(f"{base_url}/{path}?present=1{extra}")
    wait_until_drawn(page)
    expect_presenting(page)


def test_in_presenter_mode_hovering_the_head_heatmap_names_the_cell_under_the_pointer(
    projector, app_server
):
    page = projector
    open_presenting(page, app_server, "heads", sentence=SENTENCE, layer="3", head="1")
    labels = page.evaluate(
        "() => Array.from(document.querySelector('.st-key-one_head .js-plotly-plot')"
        "._fullData[0].x)"
    )
    it, animal, street = (
        next(label for label in labels if label.endswith(f":{word}"))
        for word in ("it", "animal", "street")
    )
    for query, key in ((it, animal), (animal, street), (labels[1], labels[-2])):
        assert f"{query} → {key}" in hover(page, "one_head", key, query)
    screenshot(page, "presenter-heads-hover")

    # A drag across the heatmap zooms onto the columns it framed.
    first, last = labels.index(animal), labels.index(it)
    start = page.evaluate(POINT_ON_SCREEN, ["one_head", animal, animal])
    end = page.evaluate(POINT_ON_SCREEN, ["one_head", it, it])
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=12)
    page.mouse.up()
    page.wait_for_function(
        "([key, n]) => { const r = (" + X_RANGE + ")(key); return Math.abs(r[1] - r[0]) < n - 1; }",
        arg=["one_head", len(labels)],
    )
    low, high = sorted(page.evaluate(X_RANGE, "one_head"))
    assert abs(low - first) < 0.5 and abs(high - last) < 0.5, (low, high, first, last)
    assert_page_healthy(page)


def test_in_presenter_mode_hovering_a_line_chart_names_the_point_under_the_pointer(
    projector, app_server
):
    page = projector
    open_presenting(page, app_server, "training")
    page.locator(".st-key-tr_lag_accuracy").scroll_into_view_if_needed()
    traces = page.evaluate(
        """() => document.querySelector('.st-key-tr_lag_accuracy .js-plotly-plot')._fullData
            .map(t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))"""
    )
    apart = points_apart(traces)
    assert len(apart) >= 2, traces
    for name, x, y in apart[:3]:
        text = hover(page, "tr_lag_accuracy", x, y)
        # "RNN<br>20: 1.250e-1" as drawn: the line's name, then x: y.
        shown_x, shown_y = text.removeprefix(name).split(": ")
        assert text.startswith(name) and shown_x == str(x), (text, name, x, y)
        assert float(shown_y) == pytest.approx(y, rel=1e-3), (text, y)
    screenshot(page, "presenter-training-hover")
    assert_page_healthy(page)


def test_presenter_mode_draws_chart_text_larger_and_every_chart_inside_the_screen(
    browser, app_server
):
    """Larger for the back of the room, without scaling the page under the charts."""
    tick_size = """(key) => { const tick = document.querySelector(`.st-key-${key} .xtick text`);
        return tick && parseFloat(getComputedStyle(tick).fontSize); }"""
    overflowing = """(sel) => [...document.querySelectorAll(sel)].filter(chart => {
        const main = document.querySelector('[data-testid="stMain"]').getBoundingClientRect();
        const svg = chart.querySelector('.main-svg').getBoundingClientRect();
        return svg.right > main.right + 1 || svg.left < main.left - 1;
    }).length"""
    sizes = {}
    for present in ("0", "1"):
        context = browser.new_context(viewport=PROJECTOR)
        context.set_default_timeout(30_000)
        try:
            page = context.new_page()
            page.goto(f"{app_server}/heads?present={present}&sentence={quote(SENTENCE)}")
            wait_until_drawn(page)
            sizes[present] = page.wait_for_function(tick_size, arg="one_head").json_value()
            assert page.evaluate(overflowing, CHART) == 0
        finally:
            context.close()
    assert sizes["1"] >= 1.4 * sizes["0"], sizes
