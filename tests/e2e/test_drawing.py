"""How the attention page's charts are drawn in a real browser: once, with every label in view.

Plotly grows a margin its labels do not fit by drawing the whole chart a second time. The
attention charts carry margins estimated from their labels (components/margins.py) so
that, on every keystroke, each is drawn once: plotly kept every margin the server sent.
Where it did not, the labels still fit (automargin is on) but the chart cost twice.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.e2e.test_browser import (
    CHART,
    FIRST_CHART_TIMEOUT_MS,
    wait_until_drawn,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

# Long words, a CJK character (MiniLM reads it as itself), an escaped tag and an emoji.
SENTENCE = "Extraordinarily 我 counterrevolutionary <b>zebras</b> 😀 sang tonight"

# The charts of each tab below the heads: the first one's are drawn with the heads.
KEYS_BY_VIEW = {
    "statistics": ("all_heads", "one_head", "focus", "summary"),
    "rollout": ("rollout",),
}

# Once every chart of the view is drawn and the app idle: for each chart, the margins asked
# for, the ones plotly drew with, and every tick label's box against the chart's own box.
# One evaluation reads them all, so no rerun can replace a chart half-way through.
_DRAWN = """
([sel, keys]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning'
        || document.querySelector('[data-stale="true"]')) return null;
    const charts = {};
    for (const chart of document.querySelectorAll(sel)) {
        const gd = chart.querySelector('.js-plotly-plot');
        const svg = gd && gd.querySelector('.main-svg');
        const host = chart.closest('[class*="st-key-"]');
        if (!svg || !gd._fullLayout || !gd._fullLayout._size || !host) return null;
        const key = [...host.classList].find(k => k.startsWith('st-key-')).slice(7);
        const asked = gd.layout.margin || {}, drawn = gd._fullLayout._size;
        const box = svg.getBoundingClientRect();
        const outside = [...gd.querySelectorAll('.xtick text, .ytick text')].filter(t => {
            const r = t.getBoundingClientRect();
            return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1
                                   || r.top < box.top - 1 || r.bottom > box.bottom + 1);
        }).map(t => t.textContent);
        charts[key] = {asked, drawn: {l: drawn.l, r: drawn.r, t: drawn.t, b: drawn.b}, outside};
    }
    return keys.every(k => k in charts) ? charts : null;
}
"""


@pytest.mark.parametrize("query", ["", "&lang=zh", "&present=1"], ids=["en", "zh", "projector"])
@pytest.mark.parametrize("view", KEYS_BY_VIEW)
def test_the_attention_charts_are_drawn_once_with_every_label_in_view(
    page, app_server, query, view
):
    page.goto(f"{app_server}/heads?sentence={quote(SENTENCE)}{query}&view={view}")
    wait_until_drawn(page)
    charts = page.wait_for_function(
        _DRAWN, arg=[CHART, list(KEYS_BY_VIEW[view])], timeout=FIRST_CHART_TIMEOUT_MS
    ).json_value()
    for key, chart in charts.items():
        assert chart["outside"] == [], (key, chart)
        for side in "lrtb":
            # Plotly rounds a fractional margin (the projector's are 1.5×) to whole pixels.
            asked = chart["asked"].get(side, 0)
            assert chart["drawn"][side] <= asked + 0.5, (key, side, chart)
