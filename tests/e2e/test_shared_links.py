"""Links a teacher shares, and charts on the projector, in a real browser.

A deep link that is the very first visit to a fresh server keeps presenter mode, its
language and its settings through the next change; a hand-typed ?lang=zh stays in the
address bar, so a link copied at once opens in Chinese, and so do choices a link names by
their value (`?tr_task=lm`); in presenter mode, hovering a chart names the cell or point
under the pointer (the attention heatmaps are grid charts, assets/grid_chart.js, drawn
on a canvas: they have no zoom) and chart text is larger.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from browser_helpers import (
    ANY_CHART,
    HEADS_GRID_KEYS,
    RERUN_TIMEOUT_MS,
    assert_page_healthy,
    choose,
    expect,
    grid_hover_labels,
    hover_grid,
    screenshot,
    tick_labels,
    wait_for_grids,
    wait_until_drawn,
    wait_until_idle,
)

from components.i18n import strings
from components.ui.frame import _language_in_link

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


# "10:it → 2:animal\nweight 0.6400": the query's and the key's position and token, the weight.
ONE_HEAD_HOVER = re.compile(
    rf"^(\d+):(.+) → (\d+):(.+)\n{re.escape(EN['heads.axis.weight'])} (\d\.\d{{4}})$"
)


def sentence_token(token: str) -> bool:
    """Whether a WordPiece token comes from SENTENCE (the tokenizer lowercases it)."""
    return token in ("[CLS]", "[SEP]") or token.removeprefix("##") in SENTENCE.lower()


def test_in_presenter_mode_hovering_the_head_heatmap_names_the_cell_under_the_pointer(
    projector, app_server
):
    page = projector
    open_presenting(page, app_server, "heads", sentence=SENTENCE, layer="3", head="1")
    wait_for_grids(page, ["one_head"])
    columns = tick_labels(page, "one_head")
    assert [c.split(":", 1)[1] for c in columns[2:4]] == ["animal", "didn"], columns

    # Where the cells are is the chart's own layout: sweep corner to corner, and read each
    # label that shows.
    cells, shown = [], []
    for point, text in grid_hover_labels(page, "one_head"):
        if text is None:
            continue
        match = ONE_HEAD_HOVER.match(text)
        assert match, text
        query, query_token, key, key_token, weight = match.groups()
        # The cell's row and column, as the axes label them, tokens of the sentence.
        assert columns[int(query)] == f"{query}:{query_token}", (text, columns)
        assert columns[int(key)] == f"{key}:{key_token}", (text, columns)
        assert sentence_token(query_token) and sentence_token(key_token), text
        assert 0.0 <= float(weight) <= 1.0, text
        cells.append((int(query), int(key)))
        shown.append((point, text))
    # Down and to the right, the pointer meets later queries and later keys, never earlier.
    assert len(set(cells)) >= 5, cells
    assert cells == sorted(cells) and [k for _, k in cells] == sorted(k for _, k in cells), cells
    # Left to right across the middle: one query, the keys in order.
    across = [
        ONE_HEAD_HOVER.match(text).groups()
        for _, text in grid_hover_labels(page, "one_head", at_height=0.6)
        if text
    ]
    assert len({q for q, *_ in across}) == 1, across
    keys = [int(k) for _, _, k, _, _ in across]
    assert keys == sorted(keys) and len(set(keys)) >= len(columns) // 2, across
    # Back on a cell of the sweep: the same label again, kept in the screenshot.
    point, text = shown[len(shown) // 2]
    assert hover_grid(page, "one_head", *point) == text
    expect(page.locator(".st-key-one_head .seqlens-grid-hover")).to_be_visible()
    screenshot(page, "presenter-heads-hover")
    assert_page_healthy(page)


def test_in_presenter_mode_hovering_a_line_chart_names_the_point_under_the_pointer(
    projector, app_server
):
    page = projector
    open_presenting(page, app_server, "training", tr_part="lag")
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
    # The one-head grid's first column label, as drawn on its canvas: the size of the text
    # it was drawn with (the scene the canvas replayed).
    tick_size = """(key) => {
        const grid = document.querySelector(`.st-key-${key} .seqlens-grid[data-columns]`);
        const scene = grid && grid.__grid && grid.__grid.scene;
        const first = grid && JSON.parse(grid.dataset.columns)[0];
        const op = scene && scene.ops.find(o => o.op === 'text' && o.s === first);
        return op ? op.size : null;
    }"""
    hover_size = """(key) => parseFloat(getComputedStyle(
        document.querySelector(`.st-key-${key} .seqlens-grid-hover`)).fontSize)"""
    # What each chart drew: a plotly chart's SVG, a grid chart's canvas.
    overflowing = """(sel) => [...document.querySelectorAll(sel)].filter(chart => {
        const main = document.querySelector('[data-testid="stMain"]').getBoundingClientRect();
        const drawn = chart.querySelector('.main-svg, canvas').getBoundingClientRect();
        return drawn.right > main.right + 1 || drawn.left < main.left - 1;
    }).length"""
    sizes, hover_sizes = {}, {}
    for present in ("0", "1"):
        context = browser.new_context(viewport=PROJECTOR)
        context.set_default_timeout(30_000)
        try:
            page = context.new_page()
            page.goto(f"{app_server}/heads?present={present}&sentence={quote(SENTENCE)}")
            wait_until_drawn(page)
            wait_for_grids(page, HEADS_GRID_KEYS)
            sizes[present] = page.wait_for_function(tick_size, arg="one_head").json_value()
            assert any(text for _, text in grid_hover_labels(page, "one_head")), "no label"
            hover_sizes[present] = page.evaluate(hover_size, "one_head")
            assert page.locator(ANY_CHART).count() >= len(HEADS_GRID_KEYS)
            assert page.evaluate(overflowing, ANY_CHART) == 0
        finally:
            context.close()
    assert sizes["1"] >= 1.4 * sizes["0"], sizes
    assert hover_sizes["1"] >= 1.4 * hover_sizes["0"], hover_sizes
