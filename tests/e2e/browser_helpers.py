"""What the browser tests share: selectors, timeouts, waits, hovers, screenshots.

Waits poll for a condition with generous timeouts (the first chart after a fresh start loads
the model: 12-18 s on 2 cores); nothing here sleeps and then asserts.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from components.i18n import t
from components.lessons import LESSONS

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture skips (or fails in CI) with an install hint
    expect = None

CHART = '[data-testid="stPlotlyChart"]'
# A grid chart (assets/grid_chart.js): the attention lesson's heatmaps, drawn on a canvas.
# It says it has drawn by setting its column labels on itself (data-columns).
GRID = ".seqlens-grid"
ANY_CHART = f"{CHART}, {GRID}"
# The attention lesson's grid charts, drawn when it opens (on its statistics tab).
HEADS_GRID_KEYS = ("all_heads", "one_head", "focus", "summary")
# The shared sentence box (a lesson may have text boxes of its own).
SENTENCE_INPUT = '.st-key-sentence [data-testid="stTextInput"] input'
NAV_LINKS = '[data-testid="stSidebarNav"] a'
CURRENT_NAV_LINK = f'{NAV_LINKS}[aria-current="page"]'
EXCEPTION = '[data-testid="stException"]'
FIRST_CHART_TIMEOUT_MS = 90_000
RERUN_TIMEOUT_MS = 30_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"  # git-ignored
LESSON_PATHS = {lesson.url_path for lesson in LESSONS}

# Every word is one WordPiece token, so each shows up whole on the chart's axes.
TYPED_SENTENCE = "The hungry zebra eats green leaves"
DEEP_LINK_SENTENCE = "Seven purple dolphins sang quietly tonight"


# ---------------------------------------------------------------- helpers


def record_requests(page, base_url: str, request_log: dict, name: str) -> list[tuple[str, str]]:
    """Every HTTP request and websocket this page's context opens, kept for the offline test."""
    seen = request_log.setdefault(name, [])
    page.context.on("request", lambda req: seen.append((base_url, req.url)))
    page.on("websocket", lambda ws: seen.append((base_url, ws.url)))
    return seen


def outside_requests(seen: list[tuple[str, str]]) -> list[str]:
    bad = []
    for base_url, url in seen:
        if url.startswith(("data:", "blob:")):
            continue
        server, target = urlsplit(base_url), urlsplit(url)
        local = target.hostname == "127.0.0.1" and target.port == server.port
        if not (local and target.scheme in ("http", "ws")):
            bad.append(url)
    return bad


def watch_chart_library(page) -> list[str]:
    """In order of arrival: the address of each request for Streamlit's plotly module, and
    "chart" for each chart the websocket brings (a plotly figure's layout, or a grid
    chart's panels)."""
    events: list[str] = []
    page.on("request", lambda req: "/static/js/PlotlyChart." in req.url and events.append(req.url))

    def on_websocket(ws) -> None:
        def on_frame(payload) -> None:
            if isinstance(payload, bytes) and (b'"layout"' in payload or b'"panels"' in payload):
                events.append("chart")

        ws.on("framereceived", on_frame)

    page.on("websocket", on_websocket)
    return events


def wait_until_idle(page, timeout: int = RERUN_TIMEOUT_MS) -> None:
    """No script run in progress, no stale (greyed) element, no spinner."""
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning'
                && !document.querySelector('[data-stale="true"]')
                && !document.querySelector('[data-testid="stSpinner"]');
        }""",
        timeout=timeout,
    )


# Whether a chart element has been drawn: a plotly chart once its SVG is in, a grid chart
# once it has set its column labels on itself.
_DRAWN_CHART = """(c) => c.matches('.seqlens-grid') ? c.hasAttribute('data-columns')
                                                 : !!c.querySelector('.main-svg')"""


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


def wait_for_charts(page, timeout: int = FIRST_CHART_TIMEOUT_MS) -> None:
    """At least one chart (plotly or grid), and every chart on the page drawn."""
    page.wait_for_function(
        f"""(sel) => {{
            const charts = [...document.querySelectorAll(sel)];
            return charts.length > 0 && charts.every({_DRAWN_CHART});
        }}""",
        arg=ANY_CHART,
        timeout=timeout,
    )


def wait_until_drawn(page) -> None:
    """The page's run finished and every chart it left on the page drawn. A chart whose
    element arrived with the run's last messages may still be drawing when the run ends."""
    wait_for_charts(page)
    wait_until_idle(page)
    wait_for_charts(page)


# The column labels a grid chart last drew ("0:[CLS]", "1:the", …), [] before it has drawn.
_COLUMNS = """(key) => {
    const grid = document.querySelector(`.st-key-${key} .seqlens-grid[data-columns]`);
    return grid ? JSON.parse(grid.dataset.columns) : [];
}"""


def tick_labels(page, chart_key: str) -> list[str]:
    """The column labels ("3:zebra") of the grid chart drawn with `chart_key`, as drawn."""
    return page.evaluate(_COLUMNS, chart_key)


def wait_for_tick_words(page, chart_key: str, words: list[str], timeout: int) -> None:
    """Until the grid chart's column labels ("3:zebra") contain every one of `words`."""
    page.wait_for_function(
        f"""([key, words]) => {{
            const ticks = ({_COLUMNS})(key).map(t => t.replace(/^\\d+:/, ''));
            return words.every(w => ticks.includes(w));
        }}""",
        arg=[chart_key, words],
        timeout=timeout,
    )


def wait_for_grids(page, keys, timeout: int = FIRST_CHART_TIMEOUT_MS) -> None:
    """Until the grid chart of every one of `keys` has drawn. A chart's element can join
    the page after the run ended (its code arrives then), so the page's charts so far
    are not enough."""
    page.wait_for_function(
        """(keys) => keys.every(
            k => document.querySelector(`.st-key-${k} .seqlens-grid[data-columns]`))""",
        arg=list(keys),
        timeout=timeout,
    )


# The grid chart's hover label as shown now, null while it is hidden.
_HOVER_LABEL = """(key) => {
    const tip = document.querySelector(`.st-key-${key} .seqlens-grid-hover`);
    return tip && tip.style.display !== 'none' ? tip.textContent : null;
}"""


# Where on the screen a point of grid chart `key`'s canvas is (`fx`, `fy`: fractions of its
# width and height), scrolled first if the point is not in view below the sticky header.
_GRID_POINT = """([key, fx, fy]) => {
    const canvas = document.querySelector(`.st-key-${key} .seqlens-grid canvas`);
    const header = document.querySelector('[data-testid="stHeader"]');
    const top = header ? header.getBoundingClientRect().bottom : 0;
    let box = canvas.getBoundingClientRect();
    let y = box.top + fy * box.height;
    if (y < top + 8 || y > innerHeight - 8) {
        let node = canvas.parentElement;
        while (node && !(node.scrollHeight > node.clientHeight
                         && /(auto|scroll)/.test(getComputedStyle(node).overflowY))) {
            node = node.parentElement;
        }
        (node || document.scrollingElement).scrollBy(0, y - (top + innerHeight) / 2);
        box = canvas.getBoundingClientRect();
        y = box.top + fy * box.height;
    }
    return [box.left + fx * box.width, y];
}"""


def hover_grid(page, chart_key: str, fx: float, fy: float) -> str | None:
    """Put the pointer on the point (`fx`, `fy`) of grid chart `chart_key`'s canvas
    (fractions of its width and height); the hover label it brings up, None if none."""
    x, y = page.evaluate(_GRID_POINT, [chart_key, fx, fy])
    page.mouse.move(x - 1, y)  # a move even where a scroll brought the point under it
    page.mouse.move(x, y)
    return page.evaluate(_HOVER_LABEL, chart_key)


def grid_hover_labels(
    page, chart_key: str, points: int = 40, *, at_height: float | None = None
) -> list[tuple[tuple[float, float], str | None]]:
    """Sweep the pointer across the canvas of grid chart `chart_key`: corner to corner, or
    left to right at `at_height` (a fraction of its height). Where the chart is laid out
    is its own business, so the sweep goes over all of it; returns each point (`fx`,
    `fy`) and the hover label shown there, None where none was (over a title, a tick
    label, the colour bar)."""
    found = []
    for i in range(points):
        share = (i + 0.5) / points
        point = (share, share if at_height is None else at_height)
        found.append((point, hover_grid(page, chart_key, *point)))
    return found


def assert_page_healthy(page) -> None:
    expect(page.locator(EXCEPTION)).to_have_count(0)
    text = page.locator("body").inner_text()
    assert "Something went wrong" not in text
    assert "Page not found" not in text


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def click_through_nav(page, base_url: str, shot_prefix: str | None = None) -> list[str]:
    """From `/`, click every sidebar entry (then the first again) and check each page."""
    page.goto(f"{base_url}/")
    expect(page.get_by_role("heading", name=t("home.title"), exact=True)).to_be_visible(
        timeout=FIRST_CHART_TIMEOUT_MS
    )
    wait_until_idle(page)
    links = page.locator(NAV_LINKS)
    expect(links).to_have_count(1 + len(LESSONS))
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    visited = []
    # Home first (a no-op), each lesson, then Home again after leaving it.
    for href in [*hrefs, hrefs[0]]:
        page.locator(f'{NAV_LINKS}[href="{href}"]').click()
        path = urlsplit(href).path.strip("/")
        expect(page).to_have_url(re.compile(rf"^{re.escape(href.rstrip('/'))}/?(\?.*)?$"))
        expect(page.locator(CURRENT_NAV_LINK)).to_have_attribute("href", href)
        if path in LESSON_PATHS:
            wait_for_charts(page)
        else:
            expect(page.get_by_role("heading", name=t("home.title"), exact=True)).to_be_visible()
            expect(page.locator(ANY_CHART)).to_have_count(0)
        wait_until_idle(page)
        assert_page_healthy(page)
        if shot_prefix:
            screenshot(page, f"{shot_prefix}-{len(visited):02d}-{path or 'home'}")
        visited.append(path or "home")
    return visited
