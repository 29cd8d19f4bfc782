"""SeqLens in a real browser: live typing, deep links on a fresh server, every page, offline."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from browser_helpers import (
    ANY_CHART,
    CURRENT_NAV_LINK,
    DEEP_LINK_SENTENCE,
    NAV_LINKS,
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    TYPED_SENTENCE,
    assert_page_healthy,
    click_through_nav,
    expect,
    outside_requests,
    record_requests,
    screenshot,
    tick_labels,
    wait_for_charts,
    wait_for_tick_words,
    wait_until_drawn,
    wait_until_idle,
    watch_chart_library,
)

from components.i18n import t
from components.lessons import LESSONS

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]


# ---------------------------------------------------------------- tests


def test_typing_without_enter_redraws_the_head_heatmap_and_updates_the_url(
    page, app_server, request_log
):
    seen = record_requests(page, app_server, request_log, "typing")
    page.goto(f"{app_server}/heads")
    wait_for_charts(page)
    wait_for_tick_words(page, "one_head", ["animal", "street"], timeout=RERUN_TIMEOUT_MS)
    wait_until_idle(page)

    box = page.locator(SENTENCE_INPUT)
    expect(box).to_have_count(1)
    box.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(TYPED_SENTENCE, delay=30)  # no Enter, no blur: the box is live

    wait_for_tick_words(page, "one_head", TYPED_SENTENCE.lower().split(), RERUN_TIMEOUT_MS)
    wait_until_idle(page)
    labels = tick_labels(page, "one_head")
    assert not any(label.endswith(":animal") for label in labels), labels
    assert labels[0].endswith(":[CLS]") and labels[-1].endswith(":[SEP]"), labels
    expect(page.get_by_text("[CLS] · the · hungry · zebra")).to_be_visible()
    # Typing kept its place: focus still in the box, every character there.
    expect(box).to_be_focused()
    expect(box).to_have_value(TYPED_SENTENCE)

    page.wait_for_function(
        "(s) => new URLSearchParams(location.search).get('sentence') === s",
        arg=TYPED_SENTENCE,
        timeout=RERUN_TIMEOUT_MS,
    )
    assert parse_qs(urlsplit(page.url).query)["sentence"] == [TYPED_SENTENCE]
    assert urlsplit(page.url).path == "/heads"

    page.locator(".st-key-one_head").scroll_into_view_if_needed()
    screenshot(page, "typing-heads-after")
    assert_page_healthy(page)
    assert outside_requests(seen) == []


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path)
def test_deep_link_as_first_visit_to_a_fresh_server_opens_the_lesson(
    page, fresh_app_server, request_log, lesson
):
    base = fresh_app_server
    seen = record_requests(page, base, request_log, f"deep-link-{lesson.url_path}")
    library = watch_chart_library(page)
    page.goto(f"{base}/{lesson.url_path}?sentence={quote(DEEP_LINK_SENTENCE)}")
    wait_until_drawn(page)

    # The frame asked for the chart library, and the charts used that very module: one
    # address requested (a second would be plotly fetched and evaluated twice).
    assert len({event for event in library if event != "chart"}) == 1, library
    if lesson.url_path == "heads":
        # A fresh server loads the pretrained model (seconds) before the first chart:
        # the library is on its way before that chart is.
        assert library.index("chart") > 0, library

    # The frame's navigation, not Streamlit's legacy listing of pages/ (which links /home).
    links = page.locator(NAV_LINKS)
    expect(links).to_have_count(1 + len(LESSONS))
    hrefs = {links.nth(i).get_attribute("href") for i in range(links.count())}
    assert hrefs == {f"{base}/"} | {f"{base}/{other.url_path}" for other in LESSONS}
    current = page.locator(CURRENT_NAV_LINK)
    expect(current).to_have_count(1)
    expect(current).to_have_attribute("href", f"{base}/{lesson.url_path}")
    expect(current).to_contain_text(t(lesson.title_key))

    # The frame drew around the lesson: title and the shared sentence box, filled from the URL.
    expect(page.get_by_role("heading", name=t("app.title"), exact=True)).to_be_visible()
    box = page.locator(SENTENCE_INPUT)
    expect(box).to_have_count(1)
    expect(box).to_have_value(DEEP_LINK_SENTENCE)
    expect(page.locator(ANY_CHART).first).to_be_visible()
    assert parse_qs(urlsplit(page.url).query).get("sentence") == [DEEP_LINK_SENTENCE]
    assert urlsplit(page.url).path == f"/{lesson.url_path}"

    assert_page_healthy(page)
    screenshot(page, f"deep-link-{lesson.url_path}")
    assert outside_requests(seen) == []


def test_every_sidebar_entry_renders_without_error(page, app_server, request_log):
    seen = record_requests(page, app_server, request_log, "click-through")
    visited = click_through_nav(page, app_server, shot_prefix="nav")
    assert visited == ["home", *(lesson.url_path for lesson in LESSONS), "home"]
    assert outside_requests(seen) == []


def test_no_request_leaves_the_local_server(page, app_server, request_log):
    """Offline: whatever the typing and click-through tests loaded came from our server."""
    if not {"typing", "click-through"} <= request_log.keys():
        # Run on its own (e.g. with -k): make the click-through visit here.
        seen = record_requests(page, app_server, request_log, "offline")
        click_through_nav(page, app_server)
        assert seen
    everything = [entry for entries in request_log.values() for entry in entries]
    assert len(everything) > 10, "suspiciously few requests recorded"
    assert any(url.startswith("ws://") for _, url in everything), "no websocket seen"
    assert outside_requests(everything) == []


def test_the_sentence_is_kept_when_switching_lessons(page, app_server):
    sentence = "My cat chased a red ball"
    page.goto(f"{app_server}/{LESSONS[0].url_path}?sentence={quote(sentence)}")
    wait_until_drawn(page)
    for lesson in [*LESSONS[1:], LESSONS[0]]:
        page.locator(f'{NAV_LINKS}[href="{app_server}/{lesson.url_path}"]').click()
        expect(page).to_have_url(re.compile(rf"/{lesson.url_path}\?"))
        wait_until_drawn(page)
        expect(page.locator(SENTENCE_INPUT)).to_have_value(sentence)
        assert parse_qs(urlsplit(page.url).query).get("sentence") == [sentence]
        assert_page_healthy(page)


def test_changing_a_control_updates_the_link_and_the_link_restores_the_view(
    browser, page, app_server
):
    page.goto(f"{app_server}/heads?sentence={quote(TYPED_SENTENCE)}&layer=0&head=0")
    wait_until_drawn(page)
    expect(page.get_by_role("heading", name="Layer 0, head 0")).to_be_visible()
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Head").click()
    page.get_by_role("option", name="7", exact=True).click()
    expect(page.get_by_role("heading", name="Layer 0, head 7")).to_be_visible()
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('head') === '7'",
        timeout=RERUN_TIMEOUT_MS,
    )
    shared = page.url

    other = browser.new_context(viewport={"width": 1400, "height": 1600})
    try:
        fresh = other.new_page()
        fresh.goto(shared)
        wait_for_charts(fresh)
        expect(fresh.get_by_role("heading", name="Layer 0, head 7")).to_be_visible()
        expect(fresh.locator(SENTENCE_INPUT)).to_have_value(TYPED_SENTENCE)
        assert_page_healthy(fresh)
    finally:
        other.close()


HOSTILE_INPUTS = [
    '<img src=x onerror="window.__pwned=1"> it works',
    "<script>window.__pwned=2</script> hello",
    "[click me](javascript:window.__pwned=3) ok",
    "![pixel](http://127.0.0.2:9/leak.png) and <b>bold</b> text",
]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path)
def test_hostile_text_typed_into_every_lesson_stays_text(page, app_server, request_log, lesson):
    seen = record_requests(page, app_server, request_log, f"hostile-{lesson.url_path}")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{app_server}/{lesson.url_path}")
    wait_until_drawn(page)
    box = page.locator(SENTENCE_INPUT)
    for payload in HOSTILE_INPUTS:
        box.click()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.insert_text(payload)
        page.wait_for_function(
            "(s) => new URLSearchParams(location.search).get('sentence') === s",
            arg=payload,
            timeout=RERUN_TIMEOUT_MS,
        )
        wait_until_idle(page)
        wait_for_charts(page)
        assert_page_healthy(page)
        # Clicking whatever the text might have turned into must not run it either.
        for link in page.locator('a[href^="javascript:"]').all():
            link.click()
        assert page.evaluate("() => window.__pwned") is None
        expect(page.locator("img[src*='127.0.0.2']")).to_have_count(0)
        expect(page.locator("[data-testid='stMain'] b")).to_have_count(0)
    screenshot(page, f"hostile-{lesson.url_path}")
    assert dialogs == []
    assert outside_requests(seen) == []
