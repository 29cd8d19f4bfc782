"""How the lessons' plotly charts are drawn in a real browser: with every label in view.

This file used to hold the attention lesson's plotly heatmaps to the margins estimated
from their labels (components/margins.py), so that each was drawn once. Those heatmaps
are grid charts now (assets/grid_chart.js, on a canvas; tests/e2e/test_grid_charts.py)
and the margins module is gone. The other half of that check applies to every chart
plotly still draws: with long words, a CJK character, a tag typed as text and an emoji
in the sentence, in English, in Chinese and on a projector, no tick label is drawn
outside its chart.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser_helpers import (
    CHART,
    FIRST_CHART_TIMEOUT_MS,
    wait_until_drawn,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

# Long words, a CJK character (MiniLM reads it as itself), an escaped tag and an emoji.
SENTENCE = "Extraordinarily 我 counterrevolutionary <b>zebras</b> 😀 sang tonight"

# The charts each lesson still draws with plotly when it opens (the attention lesson's, and
# the recurrent lesson's heatmaps, are grid charts). Listed: plotly's module arrives after
# the run, so a chart's element can join the page after the app went idle, and "every
# chart on the page" may be a few.
KEYS_BY_LESSON = {
    "positional": ("pe_heatmap", "pe_order_max", "pe_order_tokens"),
    "masks": ("mask_row", "mask_leakage"),
    "recurrent": (
        "rc_distance",
        "rc_theory",
        "rc_jacobian",
        "rc_clip_bars",
        "rc_clip_lines",
    ),
    "training": ("tr_lag_accuracy", "tr_ngram_unseen", "tr_perplexity", "tr_heads", "tr_yours"),
}
# A lesson whose charts sit in several parts (one tab open at a time): each part, opened by
# its link, and the charts it draws.
PARTS_BY_LESSON = {
    # The stepper draws one stage's query row at a time, under one key (its heatmaps wait in
    # an expander): four of its stages, each opened by its link.
    "masks": {
        "mask_step=x": ("mask_row", "mask_leakage"),
        "mask_step=scale": ("mask_row",),
        "mask_step=mask": ("mask_row",),
        "mask_step=softmax": ("mask_row",),
    },
    "recurrent": {
        "rc_part=distance": ("rc_distance",),
        # The step spectra wait for a click on the visitor's own sentence: the trained
        # weights read their task's sequence, where they are always drawn.
        "rc_part=theory&rc_weights=copy-lag20": ("rc_theory", "rc_jacobian"),
        "rc_part=clipping": ("rc_clip_bars", "rc_clip_lines"),
    },
    "training": {
        "tr_part=lag": ("tr_lag_accuracy",),
        "tr_part=ngram": ("tr_ngram_unseen", "tr_perplexity"),
        "tr_part=heads": ("tr_heads",),
        "tr_part=yours": ("tr_yours",),
    },
}

# Once the app is idle and every chart of `keys` drawn: for each chart, how many tick
# labels it has and those drawn outside the chart's own box. One evaluation reads them
# all, so no rerun can replace a chart half-way through.
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
        const box = svg.getBoundingClientRect();
        const ticks = [...gd.querySelectorAll('.xtick text, .ytick text')];
        const outside = ticks.filter(t => {
            const r = t.getBoundingClientRect();
            return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1
                                   || r.top < box.top - 1 || r.bottom > box.bottom + 1);
        }).map(t => t.textContent);
        charts[key] = {ticks: ticks.length, outside};
    }
    return keys.every(k => k in charts) ? charts : null;
}
"""

CASES = [
    pytest.param(
        lesson,
        query,
        id=f"{lesson}-{name}",
    )
    for lesson in KEYS_BY_LESSON
    for name, query in (("en", ""), ("zh", "&lang=zh"), ("projector", "&present=1"))
]


@pytest.mark.parametrize(("lesson", "query"), CASES)
def test_every_chart_label_is_drawn_inside_its_chart(page, app_server, lesson, query):
    parts = PARTS_BY_LESSON.get(lesson, {"": KEYS_BY_LESSON[lesson]})
    assert set().union(*parts.values()) == set(KEYS_BY_LESSON[lesson])
    for part, keys in parts.items():
        link = f"&{part}" if part else ""
        page.goto(f"{app_server}/{lesson}?sentence={quote(SENTENCE)}{query}{link}")
        wait_until_drawn(page)
        charts = page.wait_for_function(
            _DRAWN, arg=[CHART, list(keys)], timeout=FIRST_CHART_TIMEOUT_MS
        ).json_value()
        # Tick labels were read at all (a selector that matched nothing would pass).
        assert sum(chart["ticks"] for chart in charts.values()) > 0, (part, charts)
        for key, chart in charts.items():
            assert chart["outside"] == [], (part, key, chart)
