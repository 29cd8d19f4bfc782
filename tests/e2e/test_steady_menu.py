"""The sidebar's menu stays on screen while a lesson reruns under the visitor's typing.

The frame registers its menu before it draws anything only in a legacy page's run
(components/ui/frame.py); told apart from other runs by components/ui/streamlit_patches.py.
Registered first in every run, hidden and then again in the sidebar, the menu vanished for
a moment during reruns (SEQLENS_STREAMLIT_PATCHES=0).
"""

from __future__ import annotations

import pytest
from browser_helpers import (
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    assert_page_healthy,
    wait_until_drawn,
    wait_until_idle,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

# Counts every change of the page after which the sidebar's menu is not there.
WATCH_MENU = """() => {
    window.menuGone = 0;
    new MutationObserver(() => {
        if (!document.querySelector('[data-testid="stSidebarNav"]')) window.menuGone++;
    }).observe(document.body, {subtree: true, childList: true});
}"""
SENTENCE_IN_LINK = "(typed) => new URLSearchParams(location.search).get('sentence') === typed"


def test_the_menu_stays_while_typing_reruns_the_lesson(page, app_server):
    page.goto(f"{app_server}/heads")
    wait_until_drawn(page)
    page.evaluate(WATCH_MENU)
    box = page.locator(SENTENCE_INPUT)
    box.fill("")
    typed = ""
    for word in ["The", " cat", " sat", " down"]:
        box.press_sequentially(word, delay=30)
        typed += word
        page.wait_for_function(SENTENCE_IN_LINK, arg=typed, timeout=RERUN_TIMEOUT_MS)
        wait_until_idle(page)
    assert page.evaluate("window.menuGone") == 0
    assert_page_healthy(page)
