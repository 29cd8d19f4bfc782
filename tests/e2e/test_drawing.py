"""How the attention page's charts are drawn in a real browser: once, with every label in view.

Plotly grows a margin its labels do not fit by drawing the whole chart a second time. The
attention charts carry margins estimated from their labels (components/margins.py) so
that, on every keystroke, each is drawn once: plotly kept every margin the server sent.
Where it did not, the labels still fit (automargin is on) but the chart cost twice.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.e2e.test_browser import CHART, wait_for_charts, wait_until_idle

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

# Long words, a CJK character (MiniLM reads it as itself), an escaped tag and an emoji.
SENTENCE = "Extraordinarily 我 counterrevolutionary <b>zebras</b> 😀 sang tonight"

# For every chart: the margins asked for, the ones plotly drew with, and every tick
# label's box against the chart's own box.
_DRAWN = """
(sel) => [...document.querySelectorAll(sel)].map(chart => {
    const gd = chart.querySelector('.js-plotly-plot');
    const host = chart.closest('[class*="st-key-"]');
    const key = [...host.classList].find(k => k.startsWith('st-key-')).slice(7);
    const asked = gd.layout.margin || {}, drawn = gd._fullLayout._size;
    const box = gd.querySelector('.main-svg').getBoundingClientRect();
    const outside = [...gd.querySelectorAll('.xtick text, .ytick text')].filter(t => {
        const r = t.getBoundingClientRect();
        return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1
                               || r.top < box.top - 1 || r.bottom > box.bottom + 1);
    }).map(t => t.textContent);
    return {key, asked, drawn: {l: drawn.l, r: drawn.r, t: drawn.t, b: drawn.b}, outside};
})
"""


@pytest.mark.parametrize("query", ["", "&lang=zh", "&present=1"], ids=["en", "zh", "projector"])
def test_the_attention_charts_are_drawn_once_with_every_label_in_view(page, app_server, query):
    page.goto(f"{app_server}/heads?sentence={quote(SENTENCE)}{query}")
    wait_for_charts(page)
    wait_until_idle(page)
    charts = page.evaluate(_DRAWN, CHART)
    keys = {chart["key"] for chart in charts}
    assert {"all_heads", "one_head", "focus", "summary", "rollout"} <= keys, keys
    for chart in charts:
        assert chart["outside"] == [], chart
        for side in "lrtb":
            # Plotly rounds a fractional margin (the projector's are 1.5×) to whole pixels.
            asked = chart["asked"].get(side, 0)
            assert chart["drawn"][side] <= asked + 0.5, (chart["key"], side, chart)
