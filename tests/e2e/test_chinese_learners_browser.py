"""Chinese learners in a real browser: the attention lesson in 中文 opens on the Chinese
default sentence, offers the Chinese character model for it, and after one click reads
every character (no [UNK]); the examples beside the sentence are Chinese."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from browser_helpers import (
    HEADS_GRID_KEYS,
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    assert_page_healthy,
    expect,
    screenshot,
    tick_labels,
    wait_for_grids,
    wait_for_tick_words,
    wait_until_drawn,
)

from components.i18n import strings
from components.ui.sentence import DEFAULT_SENTENCES

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

ZH = strings("zh")
SENTENCE = DEFAULT_SENTENCES["zh"]
SWITCH = ".st-key-cjk_switch button"


def test_the_chinese_sentence_is_offered_its_model_and_read_without_unk(page, app_server):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_server}/heads?lang=zh")
    wait_for_grids(page, HEADS_GRID_KEYS)
    wait_until_drawn(page)
    assert_page_healthy(page)
    expect(page.locator(SENTENCE_INPUT)).to_have_value(SENTENCE)
    assert "[UNK]" in [label.split(":", 1)[1] for label in tick_labels(page, "one_head")]
    expect(page.get_by_text("你的句子里 100% 是汉字")).to_be_visible()
    expect(page.locator(SWITCH)).to_have_text(ZH["heads.cjk.switch"])
    screenshot(page, "chinese-offer")

    page.locator(SWITCH).click()
    wait_for_tick_words(page, "one_head", ["笔", "脑"], RERUN_TIMEOUT_MS * 3)
    wait_until_drawn(page)
    assert_page_healthy(page)
    assert tick_labels(page, "one_head") == [f"{i}:{c}" for i, c in enumerate(SENTENCE)]
    assert parse_qs(urlsplit(page.url).query).get("model")  # the choice is in the link
    expect(page.locator(SWITCH)).to_have_count(0)
    screenshot(page, "chinese-model")

    page.locator(".st-key-preset").click()
    for example in ("奖杯放不进箱子，因为它太大了", "我坐在河边，然后去银行存钱"):
        expect(page.get_by_role("option", name=example)).to_be_visible()
    screenshot(page, "chinese-examples")
