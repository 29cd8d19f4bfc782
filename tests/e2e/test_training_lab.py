"""The training lab in a real browser at 1400×1000: its first chart is in view without
scrolling, and it follows the sentence the visitor types."""

from __future__ import annotations

from browser_helpers import SENTENCE_INPUT, assert_page_healthy, screenshot, wait_until_drawn

FIRST = ".st-key-tr_ngram_unseen .js-plotly-plot"
# The chart's lines as drawn: name → y values.
_LINES = f"""() => Object.fromEntries(document.querySelector('{FIRST}')._fullData
    .map(t => [t.name, Array.from(t.y)]))"""


def _window(page):
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_the_first_chart_is_in_view_and_follows_the_typed_sentence(page, app_server):
    _window(page)
    page.goto(f"{app_server}/training")
    wait_until_drawn(page)
    box = page.locator(FIRST).bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 1000, box
    before = page.evaluate(_LINES)
    screenshot(page, "training-first-view")
    sentence = page.locator(SENTENCE_INPUT)
    sentence.fill("Zyx qwv jjj kkk")
    sentence.press("Enter")
    page.wait_for_function(
        f"""(old) => {{
            const line = document.querySelector('{FIRST}')?._fullData?.[1];
            return line && JSON.stringify(Array.from(line.y)) !== JSON.stringify(old);
        }}""",
        arg=before["your sentence"],
        timeout=60_000,
    )
    wait_until_drawn(page)
    after = page.evaluate(_LINES)
    assert after["held-out text"] == before["held-out text"]  # the shipped table stays
    assert after["your sentence"] != before["your sentence"]
    assert max(after["your sentence"]) > max(before["your sentence"])  # nonsense: unseen
    screenshot(page, "training-typed-sentence")
    assert_page_healthy(page)
