"""The glossary: every term defined in both languages, each lesson's terms used by that
lesson, and the definitions shown as written (components/glossary.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.glossary import LESSON_TERMS, TERMS, definition, entry, lesson_terms, term_help
from components.i18n import I18N_DIR, LANGUAGES, using_language
from components.lessons import LESSONS

CJK = re.compile(r"[\u4e00-\u9fff]")


def lesson_strings(url_path: str) -> str:
    """Everything the lesson's own string file says, in English."""
    path = Path(I18N_DIR) / "en" / f"{url_path}.json"
    return " ".join(json.loads(path.read_text(encoding="utf-8")).values())


# The terms the issue asks for, each with the lesson that uses it and a piece of the
# English name a learner would look it up by.
ASKED = {
    "bptt": ("recurrent", "BPTT"),
    "grad_norm": ("recurrent", "‖∂L/∂X_t‖"),
    "jacobian": ("recurrent", "Jacobian"),
    "singular_value": ("recurrent", "Singular value"),
    "residual_stream": ("heads", "Residual stream"),
    "w_o": ("heads", "W_O"),
    "d_head": ("heads", "d_head"),
    "cls": ("heads", "[CLS]"),
    "sink": ("heads", "sink"),
    "rope": ("positional", "RoPE"),
    "alibi": ("positional", "ALiBi"),
    "softmax": ("masks", "Softmax"),
    "causal_mask": ("masks", "Causal mask"),
    "kv_cache": ("masks", "KV cache"),
    "lstm_gate": ("recurrent", "LSTM gate"),
}

# How each term shows up in a lesson's own text (read from assets/i18n/en/<lesson>.json).
IN_TEXT = {
    "token": "token",
    "attention_head": "head",
    "qkv": "quer",
    "softmax": "softmax",
    "scaled": "√d",
    "d_head": "d_head",
    "w_o": "W_O",
    "residual_stream": "residual stream",
    "cls": "[CLS]",
    "sink": "sink",
    "ablation": "switch",
    "rollout": "rollout",
    "induction_head": "induction",
    "sinusoidal": "sinusoid",
    "learned_positions": "learned",
    "rope": "RoPE",
    "alibi": "ALiBi",
    "extrapolation": "past the length",
    "causal_mask": "causal",
    "padding_mask": "padding",
    "kv_cache": "KV",
    "hidden_state": "hidden",
    "bptt": "through time",
    "grad_norm": "∂L/∂X_t",
    "jacobian": "Jacobian",
    "singular_value": "singular value",
    "vanishing": "explod",
    "clipping": "clipping",
    "lstm_gate": "gate",
    "gru_gate": "GRU",
    "ngram": "n-gram",
    "loss": "loss",
    "perplexity": "perplexity",
    "linear_attention": "linear attention",
    "retention": "retention",
    "state_space": "state space",
    "parallel_scan": "scan",
}


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_term_has_a_name_and_a_definition_in_each_language(language):
    with using_language(language):
        for term in TERMS:
            text = definition(term)
            assert text.strip() and text.rstrip().endswith((".", "。", ")", "）")), (term, text)
            assert bool(CJK.search(text)) == (language == "zh"), (term, text)
            path = Path(I18N_DIR) / language / "glossary.json"
            assert f"glossary.name.{term}" in json.loads(path.read_text(encoding="utf-8"))


def test_the_two_languages_say_different_words_and_the_same_symbols():
    """Not copied across: the Chinese is its own text, and keeps the formulas' symbols."""
    for term in TERMS:
        english, chinese = definition(term), None
        with using_language("zh"):
            chinese = definition(term)
        assert english != chinese
        for symbol in re.findall(r"[A-Z]_[A-Za-z]+|√d_k|−∞|QKᵀ|\[CLS\]|\[SEP\]", english):
            assert symbol in chinese, (term, symbol)


def test_the_terms_the_issue_names_are_in_the_lessons_that_use_them():
    for term, (url_path, name) in ASKED.items():
        assert term in LESSON_TERMS[url_path], term
        assert name.lower() in entry(term).replace("\\", "").lower(), term


def test_each_lessons_terms_are_words_that_lesson_uses():
    assert set(LESSON_TERMS) == {lesson.url_path for lesson in LESSONS}
    assert set(IN_TEXT) == set(TERMS)
    for url_path, terms in LESSON_TERMS.items():
        text = lesson_strings(url_path).lower()
        unused = [term for term in terms if IN_TEXT[term].lower() not in text]
        assert unused == [], url_path
        assert len(set(terms)) == len(terms) and set(terms) <= set(TERMS)


def test_the_home_page_lists_every_term_once():
    assert lesson_terms("") == TERMS and len(set(TERMS)) == len(TERMS)
    assert set().union(*LESSON_TERMS.values()) == set(TERMS)


def test_term_help_gives_each_definition_in_the_current_language_as_written():
    english = term_help("cls", "w_o")
    with using_language("zh"):
        chinese = term_help("cls", "w_o")
    # The name in bold, then the definition; markdown characters escaped, so "[CLS]" and
    # "W_O" are shown as they are, not read as a link or as emphasis.
    assert english.split("\n\n") == [entry("cls"), entry("w_o")]
    assert english.startswith(r"**\[CLS\] and \[SEP\]**: ")
    assert r"W\_O" in english and "W_O" not in english
    assert "输出矩阵" in chinese and "output matrix" not in chinese


def test_term_help_refuses_a_term_it_does_not_define():
    with pytest.raises(KeyError):
        term_help("bptt", "flux capacitor")
