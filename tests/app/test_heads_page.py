"""The attention-heads lesson, driven through AppTest as a visitor would."""

from __future__ import annotations

import base64
import io
import re

import pytest
from conftest import chart, chart_specs, every_chart, grid_specs, messages, open_lesson, texts
from PIL import Image

DEFAULT_TOKENS = [
    "[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street",
    "because", "it", "was", "too", "tired", "[SEP]",
]  # fmt: skip


def labels(tokens: list[str]) -> list[str]:
    return [f"{i}:{tok}" for i, tok in enumerate(tokens)]


def columns(at, key: str) -> list[str]:
    """The column labels of the grid chart drawn with `key`."""
    return chart(at, key)["panels"][0]["columns"]


def rows(at, key: str) -> list[str]:
    return [label for _, label in chart(at, key)["panels"][0]["y"]["ticks"]]


def test_default_sentence_draws_every_chart_with_its_tokens():
    at = open_lesson("heads")
    assert not at.exception
    # heads, one head, token focus, and the open tab's: head statistics
    assert len(grid_specs(at)) == 4 and chart_specs(at) == []
    assert columns(at, "one_head") == labels(DEFAULT_TOKENS)
    assert rows(at, "one_head") == labels(DEFAULT_TOKENS)
    assert columns(at, "focus") == labels(DEFAULT_TOKENS)
    assert " · ".join(DEFAULT_TOKENS) in texts(at)


def test_all_heads_image_tiles_every_layer_and_head():
    at = open_lesson("heads", "The cat sat on the mat")
    (panel,) = chart(at, "all_heads")["panels"]
    png = base64.b64decode(panel["image"].split(",", 1)[1])
    width, height = Image.open(io.BytesIO(png)).size
    # 12 heads across, 6 layers down: the picture is about twice as wide as tall.
    assert 1.8 < width / height < 2.2
    assert (panel["cols"], panel["rows"]) == (width, height)
    hover = panel["hover"]
    assert (hover["rows"], hover["cols"]) == (6, 12) and len(hover["text"]) == 72
    assert hover["text"][13].startswith("Layer 1, head 1\nentropy")


def test_editing_the_sentence_changes_the_token_labels():
    at = open_lesson("heads")
    at.text_input(key="sentence").set_value("A giraffe ate the leaves").run()
    assert columns(at, "one_head") == labels(
        ["[CLS]", "a", "gi", "##raf", "##fe", "ate", "the", "leaves", "[SEP]"]
    )
    assert columns(at, "focus") == columns(at, "one_head")


def test_shared_link_restores_sentence_layer_and_head():
    at = open_lesson("heads", "The cat sat on the mat", layer="5", head="11")
    assert at.text_input(key="sentence").value == "The cat sat on the mat"
    assert "Layer 5, head 11" in [s.value for s in at.subheader]
    assert columns(at, "one_head")[2] == "2:cat"


def test_empty_sentence_shows_a_message_and_no_chart():
    for empty in ("", "   \t  "):
        at = open_lesson("heads")
        at.text_input(key="sentence").set_value(empty).run()
        assert not at.exception
        assert any("Type a sentence" in m for m in messages(at))
        assert len(every_chart(at)) == 0


def test_thousand_word_sentence_is_capped_with_a_note_naming_the_cap():
    words = " ".join(f"word{i % 50}" for i in range(1000))
    at = open_lesson("heads", words)
    assert not at.exception
    notes = messages(at)
    assert any("Truncated to 128 tokens" in m for m in notes)
    assert len(columns(at, "one_head")) == 128
    assert columns(at, "one_head")[-1] == "127:[SEP]"


def test_repeated_tokens_keep_their_own_labels():
    at = open_lesson("heads", "the the the")
    assert columns(at, "one_head") == [
        "0:[CLS]",
        "1:the",
        "2:the",
        "3:the",
        "4:[SEP]",
    ]


def test_chinese_and_emoji_are_reported_as_unknown_and_quoted_as_text():
    at = open_lesson("heads", "I love 你 😀 pizza")
    assert any("became its unknown token ([UNK]" in m for m in messages(at))
    assert any("😀" in t for t in texts(at))
    assert "[UNK]" in " ".join(columns(at, "one_head"))


def test_hostile_text_stays_text():
    hostile = "<img src=x onerror=alert(1)> **bold** [a](http://127.0.0.2/x)"
    at = open_lesson("heads", hostile)
    assert not at.exception
    rendered = [m.value for m in at.markdown] + messages(at)
    assert not any("onerror" in m for m in rendered)
    # The grid draws its labels as text, never as markup: each token as it is.
    assert "1:<" in columns(at, "one_head")
    assert "2:im" in columns(at, "one_head")


def test_show_strongest_head_button_selects_that_head():
    at = open_lesson("heads", "The cat sat on the mat", layer="0", head="0")
    button = at.button[0]
    layer, head = re.fullmatch(r"Show layer (\d+), head (\d+) above", button.label).groups()
    assert (layer, head) != ("0", "0")
    button.click().run()
    assert f"Layer {layer}, head {head}" in [s.value for s in at.subheader]


def test_invalid_layer_and_head_in_the_link_fall_back_to_valid_ones():
    at = open_lesson("heads", "The cat sat", layer="99", head="abc")
    assert not at.exception
    # heads, one head, token focus, and the open tab's: head statistics
    assert len(every_chart(at)) == 4


def test_one_visitor_gets_the_short_live_pause(monkeypatch):
    from components.ui import sentence

    monkeypatch.setattr(sentence, "_LAST_RUN", {})  # no other test's sessions
    at = open_lesson("heads", "The cat sat")
    assert at.text_input(key="sentence").proto.live_debounce_ms == 60


def test_preset_fills_the_sentence_box():
    at = open_lesson("heads")
    preset = at.selectbox(key="preset")
    choice = preset.options[2]
    preset.select(choice).run()
    assert at.text_input(key="sentence").value == choice
    assert at.selectbox(key="preset").value is None


def test_one_word_sentence_draws_without_a_strongest_link():
    at = open_lesson("heads", "a")
    assert not at.exception
    assert columns(at, "one_head") == ["0:[CLS]", "1:a", "2:[SEP]"]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


def test_focus_token_comes_from_the_link_and_resets_for_a_new_sentence():
    at = open_lesson("heads", "The cat sat on the mat", token="2")
    assert at.selectbox(key="token").value == 2
    at.text_input(key="sentence").set_value("A dog ran far away").run()
    assert at.selectbox(key="token").value == 1
    assert not at.exception


def test_a_layer_past_the_model_is_replaced_with_a_note():
    at = open_lesson("heads", "The cat sat", layer="9", head="-3")
    notes = [m for m in messages(at) if m.startswith("The link")]
    assert len(notes) == 2
    assert "Layer 3, head 1" in [s.value for s in at.subheader]
    assert "9" in texts(at) and "-3" in texts(at)


def _open_tab(at) -> str:
    return at.session_state["view"]


def test_only_the_open_tab_below_the_heads_is_computed_and_drawn():
    at = open_lesson("heads", "The cat sat on the mat")
    drawn = lambda: {key for key in ("summary", "ablate_tokens", "rollout") if _has_chart(at, key)}  # noqa: E731
    assert _open_tab(at) == "Head statistics" and drawn() == {"summary"}
    at.session_state["view"] = "Switch heads off"
    at.run()
    assert drawn() == set() and any(m.startswith("No head is switched off") for m in messages(at))
    at.multiselect(key="ablate").set_value([3 * 12 + 1]).run()
    assert drawn() == {"ablate_tokens"}
    at.session_state["view"] = "Rollout across layers"
    at.run()
    assert drawn() == {"rollout"} and at.slider(key="rollout_layer").value == 5
    # Back again: the heads switched off are still switched off.
    at.session_state["view"] = "Switch heads off"
    at.run()
    assert at.multiselect(key="ablate").value == [37] and drawn() == {"ablate_tokens"}


def _has_chart(at, key: str) -> bool:
    try:
        chart(at, key)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize(
    ("query", "tab"),
    [
        ({"view": "rollout"}, "Rollout across layers"),  # the tab's name
        ({"view": "跨层注意力展开（rollout）"}, "Rollout across layers"),  # shown in Chinese
        ({"ablate": "L3 H1"}, "Switch heads off"),  # a control inside the tab
        ({"rollout_layer": "2"}, "Rollout across layers"),
        ({"view": "rollout", "ablate": "L3 H1"}, "Rollout across layers"),  # the tab wins
    ],
)
def test_a_link_opens_the_tab_it_names_or_whose_control_it_sets(query, tab):
    at = open_lesson("heads", "The cat sat", **query)
    assert not at.exception and _open_tab(at) == tab


def test_a_link_naming_no_tab_opens_the_first_with_a_note():
    at = open_lesson("heads", "The cat sat", view="nonsense")
    assert not at.exception and _open_tab(at) == "Head statistics"
    assert any("does not offer" in m for m in messages(at))


def test_the_open_tab_stays_open_when_the_language_changes():
    at = open_lesson("heads", "The cat sat", view="rollout")
    at.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception and _open_tab(at) == "跨层注意力展开（rollout）"
