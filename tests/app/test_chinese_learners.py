"""Chinese learners: in 中文 the sentence and its examples are Chinese, and the attention
lesson, given a sentence written mostly in Chinese characters, offers the model that reads
it (the shipped Chinese character model) in one click."""

from __future__ import annotations

import json

from conftest import ROOT, chart, grid_columns, messages, open_lesson, texts

from components.i18n import strings
from components.ui.parts.heads.model_picker import CHINESE
from components.ui.sentence import DEFAULT_SENTENCES
from models.serving.catalog import SHIPPED_KEY

PRESETS = json.loads((ROOT / "assets" / "presets.json").read_text(encoding="utf-8"))
ZH, EN = DEFAULT_SENTENCES["zh"], DEFAULT_SENTENCES["en"]
OFFER = strings("en")["heads.cjk.offer_unknown"].split("{share")[0]  # "Your sentence is "
BACK = strings("en")["heads.cjk.not_chinese"].split(":")[0]


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith(("Something went wrong", "这里出了点问题")) for m in messages(at))


def _token_line(at) -> list[str]:
    """The token line under the sentence, as drawn (` · ` between tokens)."""
    return next(text for text in texts(at) if " · " in text).split(" · ")


def test_in_chinese_the_default_sentence_and_the_examples_are_chinese():
    at = open_lesson("heads", lang="zh")
    _no_failure(at)
    assert at.text_input(key="sentence").value == ZH
    assert at.selectbox(key="preset").options == PRESETS["zh"]["heads"]
    assert "sentence" not in at.query_params  # the default stays out of the link
    english = open_lesson("heads")
    assert english.text_input(key="sentence").value == EN
    assert english.selectbox(key="preset").options == PRESETS["en"]["heads"]


def test_every_example_list_is_in_its_own_language():
    han = lambda s: any("\u4e00" <= c <= "\u9fff" for c in s)  # noqa: E731
    for lesson, sentences in PRESETS["zh"].items():
        assert sentences and all(han(s) for s in sentences), lesson
    for lesson, sentences in PRESETS["en"].items():
        assert sentences and not any(han(s) for s in sentences), lesson
    assert PRESETS["zh"].keys() == PRESETS["en"].keys()


def test_changing_language_swaps_the_default_but_keeps_a_typed_sentence():
    at = open_lesson("positional")
    assert at.text_input(key="sentence").value == EN
    at.segmented_control(key="lang").set_value("zh").run()
    _no_failure(at)
    assert at.text_input(key="sentence").value == ZH
    at.text_input(key="sentence").input("猫追狗").run()
    at.segmented_control(key="lang").set_value("en").run()
    _no_failure(at)
    assert at.text_input(key="sentence").value == "猫追狗"


def test_a_sentence_in_the_link_stays_in_chinese_even_the_english_default():
    at = open_lesson("positional", EN, lang="zh")
    assert at.text_input(key="sentence").value == EN
    at.run()
    _no_failure(at)
    assert at.text_input(key="sentence").value == EN


def test_a_mostly_chinese_sentence_is_offered_the_chinese_model_in_one_click():
    at = open_lesson("heads", ZH)
    _no_failure(at)
    assert at.selectbox(key="model").value == SHIPPED_KEY
    unknown = _token_line(at).count("[UNK]")
    assert unknown > 0  # MiniLM's vocabulary lacks some of these characters
    offer = next(m for m in messages(at) if m.startswith(OFFER))
    assert f"reads {unknown} of its pieces as [UNK]" in offer
    assert "100% Chinese characters" in offer
    at.button(key="cjk_switch").click().run()
    _no_failure(at)
    assert at.selectbox(key="model").value == CHINESE
    # Every character read, none as [UNK], and every chart drawn on them.
    assert _token_line(at) == list(ZH)
    assert grid_columns(chart(at, "one_head")) == [f"{i}:{c}" for i, c in enumerate(ZH)]
    assert not any(m.startswith(OFFER) for m in messages(at))


def test_an_english_sentence_needs_no_offer_and_the_chinese_model_offers_the_way_back():
    at = open_lesson("heads", EN)
    _no_failure(at)
    assert not any(m.startswith(OFFER) for m in messages(at))
    at = open_lesson("heads", "The cat sat on 垫子", model=CHINESE)
    _no_failure(at)
    assert at.selectbox(key="model").value == CHINESE
    assert any(m.startswith(BACK) for m in messages(at))
    at.button(key="cjk_switch").click().run()
    _no_failure(at)
    assert at.selectbox(key="model").value == SHIPPED_KEY
    assert "[CLS]" in _token_line(at)


def test_the_offer_speaks_chinese_in_chinese():
    at = open_lesson("heads", lang="zh")
    _no_failure(at)
    zh = strings("zh")
    assert any(m.startswith("你的句子里 100% 是汉字") for m in messages(at))
    assert at.button(key="cjk_switch").label == zh["heads.cjk.switch"]
