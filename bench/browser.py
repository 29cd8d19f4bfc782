"""SeqLens in headless Chromium (the system's, driven by playwright): first chart, typing.

Keystroke → chart: the page records the timestamp of every keydown (the last one
counts) and a MutationObserver records the moment the token charts first show the new
sentence. "Show" means: every token-labelled chart on the page (the one-head heatmap and
the token-focus heatmap) shows exactly the new sentence's labels, at least one of them
not the old sentence's. A grid chart (assets/grid_chart.js) sets its column labels on
itself (`data-columns`) once it has drawn them; for a plotly chart, its data holds the
labels and every tick label drawn on its x axis (`.xtick text`) belongs to the new
sentence (at 128 tokens plotly thins the labels, so the last word itself may not be
drawn).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import quote

CHROMIUM = os.environ.get("SEQLENS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 1600}
CHART = '[data-testid="stPlotlyChart"]'
GRID = ".seqlens-grid"
SENTENCE_INPUT = '[data-testid="stTextInput"] input'

_INSTALL = """
() => {
  if (window.__bench) return;
  const b = window.__bench = {armed: false, lastKey: null, doneAt: null, want: [], old: []};
  window.addEventListener('keydown', (e) => { if (b.armed) b.lastKey = performance.now(); },
                          true);
  const same = (a, w) => Array.isArray(a) && a.length === w.length && a.every((v, i) => v === w[i]);
  b.check = () => {
    if (!b.armed || b.lastKey === null || b.doneAt !== null) return;
    const want = new Set(b.want), old = new Set(b.old);
    let charts = 0, fresh = 0;
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
      const gd = chart.querySelector('.js-plotly-plot');
      const x = gd && gd.data && gd.data[0] && gd.data[0].x;
      const ticks = [...chart.querySelectorAll('.xtick text')].map(t => t.textContent);
      const tokenTicks = ticks.filter(t => /^\\d+:/.test(t));
      if (!tokenTicks.length) continue;           // not a token chart
      charts += 1;
      if (!same(Array.from(x || []), b.want)) return;
      if (!tokenTicks.every(t => want.has(t))) return;
      fresh += tokenTicks.filter(t => !old.has(t)).length;
    }
    for (const grid of document.querySelectorAll('.seqlens-grid')) {
      const columns = JSON.parse(grid.dataset.columns || '[]');
      if (!columns.some(c => /^\\d+:/.test(c))) continue;  // not a token chart
      charts += 1;
      if (!same(columns, b.want)) return;
      fresh += columns.filter(c => !old.has(c)).length;
    }
    if (charts >= 2 && fresh > 0) b.doneAt = performance.now();
  };
  new MutationObserver(() => b.check()).observe(document.body,
      {childList: true, subtree: true, characterData: true, attributes: true});
}
"""

_WAIT_IDLE = """
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
}
"""

_CHARTS_DRAWN = """
([sel, least]) => {
  const charts = [...document.querySelectorAll(sel)];
  const drawn = (c) => c.querySelector('.main-svg') || c.dataset.columns !== undefined;
  return charts.length >= least && charts.every(drawn);
}
"""


def available() -> str:
    """'' when playwright and Chromium are there, else why not."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright not installed"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"no Chromium at {CHROMIUM}"
    return ""


class Browser:
    """`with Browser() as b:` one headless Chromium for the whole bench."""

    def __enter__(self) -> Browser:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.chromium = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.chromium.close()
        finally:
            self._pw.stop()

    def new_page(self, timeout_ms: int = 60_000):
        ctx = self.chromium.new_context(viewport=VIEWPORT)
        ctx.set_default_timeout(timeout_ms)
        return ctx.new_page()


# Noted in the page the moment a chart's drawing is attached: playwright's own polling
# noticed it 0.2–1.5 s later on a loaded machine.
_FIRST_CHART_CLOCK = """
(() => {
  const seen = () => {
    const drawn = '[data-testid="stPlotlyChart"] .main-svg, .seqlens-grid[data-columns]';
    if (window.__firstChartAt === undefined && document.querySelector(drawn)) {
      window.__firstChartAt = Date.now();
    }
  };
  new MutationObserver(seen).observe(document,
      {childList: true, subtree: true, attributes: true, attributeFilter: ['data-columns']});
})();
"""


def first_chart_s(
    browser: Browser, base_url: str, started_at: float, sentence: str, path: str = "heads"
) -> float:
    """Open /<path>?sentence=… as the first visitor; seconds from `started_at` (the
    server's process start, time.time()) until a plotly chart is drawn, by the page's
    own clock (both are this machine's wall clock)."""
    page = browser.new_page(timeout_ms=120_000)
    try:
        page.add_init_script(_FIRST_CHART_CLOCK)
        page.goto(f"{base_url}/{path}?sentence={quote(sentence)}")
        page.wait_for_function("() => window.__firstChartAt !== undefined")
        return page.evaluate("() => window.__firstChartAt") / 1000.0 - started_at
    finally:
        page.context.close()


class TypingBench:
    """One tab on /<path>; `type_sentence` times last keydown → token charts updated.

    `min_charts`: how many charts the page draws before it counts as loaded."""

    def __init__(
        self,
        browser: Browser,
        base_url: str,
        sentence: str,
        labels: list[str],
        path: str = "heads",
        min_charts: int = 4,
        query: str = "",
    ):
        self.page = browser.new_page(timeout_ms=120_000)
        before = f"{query}&" if query else ""
        self.page.goto(f"{base_url}/{path}?{before}sentence={quote(sentence)}")
        self.page.wait_for_function(
            _CHARTS_DRAWN, arg=[f"{CHART}, {GRID}", min_charts], timeout=120_000
        )
        self.page.wait_for_function(_WAIT_IDLE, timeout=60_000)
        self.page.evaluate(_INSTALL)
        self.labels = labels

    def close(self) -> None:
        self.page.context.close()

    def type_sentence(
        self, sentence: str, labels: list[str], typed_words: int = 30, timeout_ms: int = 60_000
    ) -> tuple[float, float]:
        """(last keydown → charts show `sentence`, seconds spent typing).

        Up to `typed_words` words are typed key by key (keyboard.type, no Enter).
        """
        page = self.page
        box = page.locator(SENTENCE_INPUT).first
        box.click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        page.evaluate(
            "([want, old]) => { const b = window.__bench; b.want = want; b.old = old;"
            " b.lastKey = null; b.doneAt = null; b.armed = true; }",
            [labels, self.labels],
        )
        t0 = time.monotonic()
        words = sentence.split(" ")
        if len(words) > typed_words:
            # A long sentence: paste all but its last words (one input event, no
            # keydown), then type the rest key by key; the debounced rerun follows the
            # last key either way, and this saves ~8 s of typing per 128-token run.
            page.keyboard.insert_text(" ".join(words[:-typed_words]) + " ")
            page.keyboard.type(" ".join(words[-typed_words:]))
        else:
            page.keyboard.type(sentence)
        typing_s = time.monotonic() - t0
        page.wait_for_function("() => window.__bench.doneAt !== null", timeout=timeout_ms)
        last_key, done_at = page.evaluate(
            "() => { const b = window.__bench; b.armed = false; return [b.lastKey, b.doneAt]; }"
        )
        self.labels = labels
        # Let the rerun chain and the URL update settle before the next sentence.
        page.wait_for_function(_WAIT_IDLE, timeout=timeout_ms)
        page.wait_for_timeout(500)
        return (done_at - last_key) / 1000.0, typing_s
