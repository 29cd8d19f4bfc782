"""prepare_sentence: the one gate every visitor's text passes before a model sees it."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.ui.inputs import parse_choice, parse_choices, parse_number
from models import text as text_module
from models.text import (
    MAX_CHARS,
    READ_CHARS,
    Note,
    PreparedText,
    prepare_sentence,
    tokenization_notes,
)


def _codes(prepared: PreparedText) -> list[str]:
    return [note.code for note in prepared.notes]


def _note(prepared: PreparedText, code: str) -> Note:
    (note,) = [note for note in prepared.notes if note.code == code]
    return note


# --- empty input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["", "   ", " \t\n  \n", None], ids=["empty", "spaces", "ws", "none"]
)
def test_empty_or_blank_input_is_empty_with_one_empty_note(raw):
    prepared = prepare_sentence(raw)
    assert prepared.text == ""
    assert prepared.is_empty
    assert prepared.notes == (Note("empty_text"),)


def test_non_string_input_is_read_as_its_text():
    assert prepare_sentence(42) == PreparedText("42")
    assert prepare_sentence(3.5).text == "3.5"
    assert not prepare_sentence(42).is_empty


# --- caps --------------------------------------------------------------------------------


def test_ten_thousand_chars_are_capped_with_a_note_naming_the_cap():
    prepared = prepare_sentence("x" * 10_000)
    assert len(prepared.text) == MAX_CHARS == 2000
    assert prepared.text == "x" * MAX_CHARS
    note = _note(prepared, "truncated_chars")
    assert note.params == {"cap": MAX_CHARS, "original": 10_000}
    assert _codes(prepared) == ["truncated_chars"]


EIGHT_MB = 8 * 2**20


def test_an_eight_megabyte_text_is_cut_before_it_is_cleaned(monkeypatch):
    """Cleaning reads every character: a text from a script must be cut first, so one
    visitor's 8 MB paste costs what a page's worth of text costs."""
    normalized: list[int] = []
    real_normalize = unicodedata.normalize

    def recording(form: str, text: str) -> str:
        normalized.append(len(text))
        return real_normalize(form, text)

    monkeypatch.setattr(text_module.unicodedata, "normalize", recording)
    prepared = prepare_sentence("word " * (EIGHT_MB // 5))
    assert normalized and max(normalized) <= 10 * MAX_CHARS
    assert prepared.text == ("word " * MAX_CHARS)[:MAX_CHARS].rstrip()
    note = _note(prepared, "truncated_chars")
    assert note.params == {"cap": MAX_CHARS, "original": EIGHT_MB // 5 * 5}


def test_a_text_as_long_as_a_box_takes_is_said_to_be_at_least_that_long():
    """A sentence box keeps READ_CHARS characters of a longer value (a link's, a
    script's): the text the page gets may have been longer, and the note says so."""
    prepared = prepare_sentence("x" * READ_CHARS)
    assert prepared.text == "x" * MAX_CHARS
    note = _note(prepared, "truncated_chars_at_least")
    assert note.params == {"cap": MAX_CHARS, "original": READ_CHARS}
    assert _codes(prepared) == ["truncated_chars_at_least"]
    assert READ_CHARS <= 10 * MAX_CHARS


def test_cap_cut_leaves_no_trailing_space():
    prepared = prepare_sentence("ab " * 7, max_chars=6)  # "ab ab " cut, then stripped
    assert prepared.text == "ab ab"
    assert _note(prepared, "truncated_chars").params == {"cap": 6, "original": 20}


def test_text_at_the_cap_is_not_truncated():
    prepared = prepare_sentence("y" * MAX_CHARS)
    assert prepared.text == "y" * MAX_CHARS
    assert prepared.notes == ()


def test_whitespace_runs_collapse_to_single_spaces():
    prepared = prepare_sentence("  the\tcat \n\n sat  ")
    assert prepared.text == "the cat sat"
    assert prepared.notes == ()


# --- invisible characters ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected", "count"),
    [
        ("a\x00b\x07c\x1bd", "abcd", 3),  # NUL, BEL, ESC: control characters (Cc)
        ("👨\u200d👩\u200d👧", "👨👩👧", 2),  # zero-width joiner (Cf)
        ("abc\u202edef", "abcdef", 1),  # right-to-left override (Cf)
        ("pay\u202e\u200bfdp.exe\u2066x", "payfdp.exex", 3),  # mixed format marks
        ("\u200b\u200c\u200d", "", 3),  # only invisible characters
    ],
    ids=["control", "zwj", "rlo", "mixed", "only-invisible"],
)
def test_invisible_characters_are_removed_and_counted(raw, expected, count):
    prepared = prepare_sentence(raw)
    assert prepared.text == expected
    assert _note(prepared, "removed_invisible").params == {"count": count}
    assert ("empty_text" in _codes(prepared)) == (expected == "")


@pytest.mark.parametrize("separator", ["\r", "\x0b", "\x0c"], ids=["cr", "vt", "ff"])
def test_whitespace_control_characters_still_separate_words(separator):
    assert prepare_sentence(f"one{separator}two").text == "one two"


# --- text kept as it is ------------------------------------------------------------------


def test_cjk_is_kept_unchanged():
    for raw in ("我爱你", "日本語のテキスト", "한국어 문장"):
        assert prepare_sentence(raw) == PreparedText(raw)


def test_combining_accents_are_composed_nfc():
    prepared = prepare_sentence("cafe\u0301 nai\u0308ve")
    assert prepared.text == "caf\u00e9 na\u00efve"
    assert len(prepared.text) == len("café naïve") == 10
    assert unicodedata.is_normalized("NFC", prepared.text)
    assert prepared.notes == ()


@pytest.mark.parametrize(
    "raw",
    [
        "<b>bold</b> <script>alert(1)</script>",
        '<a href="https://example.com">link</a> <img src=x onerror=alert(1)>',
        "**bold** _it_ [link](https://example.com) ![img](https://example.com/a.png) # head",
        r"$\frac{a}{b}$ and $$\sum_i x_i$$ \textbf{x}",
        "&amp; &lt; {curly} {0} %s",
    ],
    ids=["html", "html-attrs", "markdown", "latex", "entities-format"],
)
def test_markup_is_kept_verbatim_as_text(raw):
    assert prepare_sentence(raw) == PreparedText(raw)


# --- properties --------------------------------------------------------------------------


def _check_invariants(prepared: PreparedText, cap: int) -> None:
    assert isinstance(prepared.text, str)
    assert len(prepared.text) <= cap
    assert not any(unicodedata.category(ch) in {"Cc", "Cf"} for ch in prepared.text)
    assert prepared.text == prepared.text.strip()
    assert prepared.is_empty == ("empty_text" in _codes(prepared))
    assert prepared.is_empty == (prepared.text == "")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_becomes_short_visible_text(raw):
    _check_invariants(prepare_sentence(raw), MAX_CHARS)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=40))
def test_any_text_respects_any_cap(raw, cap):
    prepared = prepare_sentence(raw, max_chars=cap)
    _check_invariants(prepared, cap)
    truncated = any(code.startswith("truncated_chars") for code in _codes(prepared))
    if len(raw) >= text_module.chars_read(cap):
        # Only the first chars_read(cap) characters are read, and the note says the text was cut.
        assert truncated
        return
    uncapped = prepare_sentence(raw, max_chars=10**9).text
    assert uncapped.startswith(prepared.text)
    assert truncated == (len(uncapped) > cap)


# --- values read from a link ---------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected", "code"),
    [
        ("5", 5, None),
        ("99", 11, "link_clamped"),
        ("-1", 0, "link_clamped"),
        ("1e9", 11, "link_clamped"),
        ("4.6", 5, "link_clamped"),
        ("nan", 3, "link_not_a_number"),
        ("inf", 3, "link_not_a_number"),
        ("abc", 3, "link_not_a_number"),
        ("", 3, "link_not_a_number"),
    ],
)
def test_parse_number_clamps_or_replaces_with_a_note(raw, expected, code):
    value, note = parse_number(raw, 0, 11, 3)
    assert value == expected and type(value) is int
    assert (note.code if note else None) == code
    if note:
        assert note.quote == raw and note.params["used"] == expected


def test_parse_number_keeps_floats_as_floats():
    assert parse_number("0.75", 0.5, 1.5, 1.0) == (0.75, None)
    value, note = parse_number("3", 0.5, 1.5, 1.0)
    assert value == 1.5 and note.code == "link_clamped"


def test_parse_choice_matches_the_options_text_only():
    assert parse_choice("2", [0, 1, 2], 1) == (2, None)
    value, note = parse_choice("<b>2</b>", [0, 1, 2], 1)
    assert value == 1 and note.code == "link_not_a_choice" and note.quote == "<b>2</b>"
    assert "<b>" not in str(note.params)


def test_parse_choices_drops_unknown_and_extra_values():
    assert parse_choices(["1", "3"], [1, 2, 3], [2], 4) == ([1, 3], None)
    value, note = parse_choices(["1", "x", "2", "3"], [1, 2, 3], [2], 2)
    assert value == [1, 2] and note.code == "link_choices_dropped"
    value, note = parse_choices(["x"], [1, 2, 3], [2], 2)
    assert value == [2] and note.params == {"kept": 0, "given": 1}


def test_tokenization_notes_name_the_cap_and_quote_unknown_pieces_once():
    assert tokenization_notes(10, 10, 128, []) == []
    cut, unknown = tokenization_notes(128, 400, 128, ["😀", "我", "😀"], vocabulary="own_")
    assert cut.code == "own_truncated_tokens" and cut.params["cap"] == 128
    assert cut.params["original"] == 400
    assert unknown.code == "own_unknown_tokens" and unknown.params == {"count": 3}
    assert unknown.quote == "😀 我"
