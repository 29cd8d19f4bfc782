"""The recurrent lesson's first view in a browser at 1400×1000: its first chart starts in
view without scrolling, and is drawn again on the sentence the visitor types."""

from __future__ import annotations

from browser_helpers import (
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    assert_page_healthy,
    screenshot,
    wait_until_drawn,
    wait_until_idle,
)
from playwright.sync_api import expect

from models.nets.tokenizer import MAX_TOKENS, Tokenizer

TYPED = "My cat sat on the warm laptop because it was tired"
SCREEN = {"width": 1400, "height": 1000}

# The steps the distance chart's RNN line names on hover ("3:sat"), first token last
# (its x axis is k = τ − t).
_HOVER_TOKENS = """() => {
    const plot = document.querySelector('.st-key-rc_distance .js-plotly-plot');
    const rnn = plot && plot.data && plot.data.find((trace) => trace.name === 'RNN');
    return rnn && rnn.text ? [...rnn.text] : [];
}"""


def _tokens(sentence: str) -> list[str]:
    tokens = Tokenizer().encode(sentence, MAX_TOKENS).tokens
    return [f"{step}:{token}" for step, token in enumerate(tokens)]


def test_the_first_chart_is_in_view_and_follows_the_typed_sentence(page, app_server):
    page.set_viewport_size(SCREEN)
    page.goto(f"{app_server}/recurrent")
    wait_until_drawn(page)
    chart = page.locator(".st-key-rc_distance")
    expect(chart).to_have_count(1)
    top = chart.bounding_box()["y"]
    assert 0 < top < SCREEN["height"] - 150, top  # its title and first gridlines in view
    before = page.evaluate(_HOVER_TOKENS)
    default = page.locator(SENTENCE_INPUT).input_value()
    assert before[::-1] == _tokens(default)
    screenshot(page, "recurrent-first-view")

    box = page.locator(SENTENCE_INPUT)
    box.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(TYPED, delay=20)
    page.wait_for_function(
        f"(words) => JSON.stringify(({_HOVER_TOKENS})().reverse()) === JSON.stringify(words)",
        arg=_tokens(TYPED),
        timeout=RERUN_TIMEOUT_MS,
    )
    wait_until_idle(page)
    assert page.evaluate(_HOVER_TOKENS) != before
    screenshot(page, "recurrent-first-view-typed")
    assert_page_healthy(page)
