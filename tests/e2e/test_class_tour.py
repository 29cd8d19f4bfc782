"""The 45-minute class tour in Chromium, as a class starts it on a fresh server: from the
home page's link, through three steps. A question's chart and answer reach the browser only
once the learner has answered; a wrong answer is marked wrong and a right one right; the
address bar's link, reloaded, lands on the same step.
"""

from __future__ import annotations

import re

from browser_helpers import (
    FIRST_CHART_TIMEOUT_MS,
    assert_page_healthy,
    expect,
    screenshot,
    wait_until_drawn,
    wait_until_idle,
)

from components.i18n import t
from components.tours.schema import tours

TOUR = tours()["ngrams-to-gpt"]
QUESTION_STEP = 0  # the first step: which character the bigram model expects next
PANEL = '[data-testid="stSidebar"] [data-testid="stVerticalBlockBorderWrapper"]'
SCREEN = {"width": 1400, "height": 1000}


def _step_title(index: int) -> str:
    return f"{index + 1}. {TOUR.steps[index].title['en']}"


def _panel(page):
    return page.locator('[data-testid="stSidebar"]')


def _click_tour_button(page, label: str) -> None:
    _panel(page).get_by_role("button", name=label).click()
    wait_until_idle(page)


def _verdict(page) -> str:
    sidebar = _panel(page)
    right = sidebar.locator('[data-testid="stAlertContentSuccess"]')
    wrong = sidebar.locator('[data-testid="stAlertContentError"]')
    expect(right.or_(wrong)).to_have_count(1)
    return "right" if right.count() else "wrong"


def _revealed_answer(page) -> str:
    """The right option, as the reveal quotes it: "It expects X most, with …"."""
    text = _panel(page).inner_text()
    found = re.search(r"It expects (.+?) most, with probability", text)
    assert found, text
    return found.group(1).strip()


def _choose(page, label: str) -> None:
    """Choose an option, check it, and wait for the verdict the check brings."""
    option = _panel(page).locator('[role="radiogroup"] label').filter(has_text=label).first
    option.click()
    expect(option.locator("input")).to_be_checked()
    _click_tour_button(page, t("tour.check"))
    verdicts = '[data-testid="stAlertContentSuccess"], [data-testid="stAlertContentError"]'
    expect(_panel(page).locator(verdicts)).to_have_count(1)
    wait_until_idle(page)


def test_the_class_tour_followed_through_three_steps_on_a_fresh_server(fresh_app_server, context):
    context.set_default_timeout(FIRST_CHART_TIMEOUT_MS)
    page = context.new_page()
    page.set_viewport_size(SCREEN)
    received: list[bytes] = []
    page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived",
            lambda frame: received.append(frame if isinstance(frame, bytes) else frame.encode()),
        ),
    )

    page.goto(f"{fresh_app_server}/")
    page.get_by_role("link", name=t("home.choice.start")).first.click()
    expect(_panel(page).get_by_text(_step_title(QUESTION_STEP))).to_be_visible()
    wait_until_idle(page)
    assert_page_healthy(page)
    expect(page.get_by_text(t("tour.answer_first"))).to_be_visible()
    screenshot(page, "class-tour-step-1-asked")
    before = b"".join(received)
    assert b"It expects" not in before, "the reveal reached the browser before an answer"
    assert b"tr_ngram_next" not in before, "the held-back chart reached the browser"
    assert t("tour.right", given="").split(":")[0].encode() not in before

    labels = _panel(page).locator('[role="radiogroup"] label')
    expect(labels.nth(1)).to_be_visible()  # the question's options drawn, not only its title
    options = labels.all_inner_texts()
    assert len(options) >= 2, options
    _choose(page, options[0])
    answer = _revealed_answer(page)
    if _verdict(page) == "right":  # the first option was right: ask again and miss
        assert options[0] == answer
        _click_tour_button(page, t("tour.ask_again"))
        _choose(page, next(o for o in options if o != answer))
    assert _verdict(page) == "wrong"
    expect(page.get_by_text(t("tour.answer_first"))).to_have_count(0)
    wait_until_drawn(page)
    assert b"tr_ngram_next" in b"".join(received), "answered: the chart is sent"
    screenshot(page, "class-tour-step-1-wrong")

    _click_tour_button(page, t("tour.ask_again"))
    _choose(page, answer)
    assert _verdict(page) == "right"
    screenshot(page, "class-tour-step-1-right")

    for index in (1, 2):
        _click_tour_button(page, t("tour.next"))
        expect(_panel(page).get_by_text(_step_title(index))).to_be_visible()
        wait_until_drawn(page)
        assert_page_healthy(page)
        screenshot(page, f"class-tour-step-{index + 1}")
    assert re.search(r"[?&]step=3(&|$)", page.url), page.url
    page.reload()
    expect(_panel(page).get_by_text(_step_title(2))).to_be_visible()
    wait_until_drawn(page)
    assert_page_healthy(page)
    screenshot(page, "class-tour-step-3-reloaded")
