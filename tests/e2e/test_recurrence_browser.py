"""The lesson "Recurrence returns" in a browser: a deep link to one of its parts, in Chinese,
as the first visit to a fresh server, then every part by its tab and a typed sentence."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from browser_helpers import (
    ANY_CHART,
    SENTENCE_INPUT,
    assert_page_healthy,
    screenshot,
    wait_until_drawn,
)
from playwright.sync_api import expect

from components.i18n import t
from components.lessons import lesson_named
from components.ui.parts.masks.reading import encode

LESSON = lesson_named("recurrence")
SCREEN = {"width": 1400, "height": 1000}
TYPED = "The selective state keeps some tokens and forgets others"


def _tab(page, part: str, language: str):
    return page.get_by_role("tab", name=t(f"{LESSON.part_labels}.{part}", language=language))


def test_a_deep_link_to_a_part_opens_it_in_chinese_on_a_fresh_server(fresh_app_server, context):
    page = context.new_page()
    page.set_viewport_size(SCREEN)
    page.goto(f"{fresh_app_server}/recurrence?rr_part=patterns&lang=zh")
    wait_until_drawn(page)
    assert_page_healthy(page)
    expect(page.get_by_role("heading", name=t("recurrence.title", language="zh"))).to_be_visible()
    expect(_tab(page, "patterns", "zh")).to_have_attribute("aria-selected", "true")
    # The address bar keeps the open tab by its label, in the language it is shown in.
    kept = parse_qs(urlparse(page.url).query)[LESSON.part_key]
    assert kept == [t(f"{LESSON.part_labels}.patterns", language="zh")], page.url
    screenshot(page, "recurrence-deep-link-zh")


def test_every_part_draws_and_follows_the_typed_sentence(page, app_server):
    page.set_viewport_size(SCREEN)
    page.goto(f"{app_server}/recurrence")
    wait_until_drawn(page)
    for part in LESSON.parts:
        _tab(page, part, "en").click()
        wait_until_drawn(page)
        assert_page_healthy(page)
        assert page.locator(ANY_CHART).count() > 0, part
        screenshot(page, f"recurrence-{part}")

    box = page.locator(SENTENCE_INPUT)
    box.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(TYPED, delay=10)
    page.keyboard.press("Enter")
    _, tokens, _ = encode(TYPED)
    expect(page.get_by_text(" · ".join(tokens), exact=True)).to_be_visible()
    wait_until_drawn(page)
    assert_page_healthy(page)
    screenshot(page, "recurrence-typed")
