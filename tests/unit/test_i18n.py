"""Every UI language holds every string, with the same placeholders, and `t` follows
the current language.

A key added to one language's file and not to another's fails here, so a lesson
cannot ship a string that only half of its visitors can read.
"""

from __future__ import annotations

import json
import re
import string
import threading
from collections import Counter
from pathlib import Path

import pytest

from components.i18n import (
    DEFAULT_LANGUAGE,
    I18N_DIR,
    LANGUAGES,
    current_language,
    set_language,
    strings,
    t,
    using_language,
)

OTHER_LANGUAGES = [code for code in LANGUAGES if code != DEFAULT_LANGUAGE]
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def _restore_language():
    """A test that sets the language must not leak it into the next test."""
    with using_language(DEFAULT_LANGUAGE):
        yield


def fields(text: str) -> dict[str, str]:
    """Each replacement field of a format string: name → its conversion and format spec."""
    found: dict[str, str] = {}
    for _, name, spec, conversion in string.Formatter().parse(text):
        if name is None:
            continue
        found[name] = f"!{conversion or ''}:{spec or ''}"
    return found


def dummy(spec: str):
    """A value of the kind a format spec expects: a float for .2f/.0%/.1e/g, else an int."""
    spec = spec.split(":", 1)[1]
    if spec and spec[-1] in "eEfFgG%":
        return 0.123
    return 7


def _load_rejecting_duplicates(path: Path) -> dict[str, str]:
    def pairs_hook(pairs):
        counts = Counter(key for key, _ in pairs)
        repeated = sorted(key for key, count in counts.items() if count > 1)
        assert not repeated, f"{path} repeats keys inside the file: {repeated}"
        return dict(pairs)

    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=pairs_hook)


# --- the files ---------------------------------------------------------------------------


def test_every_language_has_a_folder_with_the_same_files():
    english_files = sorted(p.name for p in (I18N_DIR / DEFAULT_LANGUAGE).glob("*.json"))
    assert english_files
    for code in LANGUAGES:
        assert sorted(p.name for p in (I18N_DIR / code).glob("*.json")) == english_files, code


@pytest.mark.parametrize("code", list(LANGUAGES))
def test_string_files_are_flat_json_of_non_empty_strings_without_duplicates(code):
    for path in sorted((I18N_DIR / code).glob("*.json")):
        part = _load_rejecting_duplicates(path)
        bad = [k for k, v in part.items() if not isinstance(v, str) or not v.strip()]
        assert bad == [], f"{code}/{path.name}: {bad}"


def test_english_string_files_have_no_duplicate_keys():
    files = sorted((I18N_DIR / "en").glob("*.json"))
    assert files
    owners: dict[str, str] = {}
    clashes = []
    for path in files:
        part = _load_rejecting_duplicates(path)
        assert all(isinstance(value, str) for value in part.values()), path.name
        for key in part:
            if key in owners:
                clashes.append((key, owners[key], path.name))
            owners[key] = path.name
    assert clashes == []
    assert set(strings("en")) == set(owners)


@pytest.mark.parametrize("code", OTHER_LANGUAGES)
def test_each_file_holds_the_same_keys_as_its_english_counterpart(code):
    """Same keys file by file, so each lesson's translation lives beside its English."""
    for path in sorted((I18N_DIR / DEFAULT_LANGUAGE).glob("*.json")):
        english = json.loads(path.read_text(encoding="utf-8"))
        other = json.loads((I18N_DIR / code / path.name).read_text(encoding="utf-8"))
        assert sorted(english.keys() - other.keys()) == [], f"missing in {code}/{path.name}"
        assert sorted(other.keys() - english.keys()) == [], f"only in {code}/{path.name}"


@pytest.mark.parametrize("code", OTHER_LANGUAGES)
def test_every_key_exists_in_both_languages(code):
    english, other = strings(DEFAULT_LANGUAGE), strings(code)
    assert sorted(english.keys() - other.keys()) == []
    assert sorted(other.keys() - english.keys()) == []


@pytest.mark.parametrize("code", OTHER_LANGUAGES)
def test_placeholders_match_english_by_name_conversion_and_format(code):
    english, other = strings(DEFAULT_LANGUAGE), strings(code)
    mismatched = {
        key: (fields(english[key]), fields(other[key]))
        for key in english
        if key in other and fields(english[key]) != fields(other[key])
    }
    assert mismatched == {}


@pytest.mark.parametrize("code", list(LANGUAGES))
def test_every_string_formats_with_dummy_params(code):
    """Formatting a translation never raises: braces balanced, specs fit their values."""
    failures = {}
    for key, text in strings(code).items():
        params = {name: dummy(spec) for name, spec in fields(text).items()}
        try:
            with using_language(code):
                formatted = t(key, **params)
        except (KeyError, ValueError, IndexError, TypeError) as error:
            failures[key] = repr(error)
            continue
        assert formatted.strip(), key
    assert failures == {}


def test_the_dummy_values_fit_the_specs_used():
    assert format(dummy("!:.2f"), ".2f") == "0.12"
    assert format(dummy("!:.0%"), ".0%") == "12%"
    assert format(dummy("!:"), "") == "7"


@pytest.mark.parametrize("code", OTHER_LANGUAGES)
def test_escaped_braces_match_english(code):
    """A literal {{…}} in English (H_{{t−1}}) stays literal in the translation."""
    english, other = strings(DEFAULT_LANGUAGE), strings(code)
    for key in english:
        assert english[key].count("{{") == other[key].count("{{"), key
        assert english[key].count("}}") == other[key].count("}}"), key


def test_chinese_strings_are_chinese():
    """A key copied over untranslated would pass the key checks; it must not pass this.

    Names, symbols and formulas stay as they are (SeqLens, RoPE, r^k, ‖∂L/∂H_t‖ …)."""
    english, chinese = strings(DEFAULT_LANGUAGE), strings("zh")
    untranslated = [
        key
        for key, text in chinese.items()
        if not CJK.search(text) and re.search(r"[A-Za-z]{4,}\s+[A-Za-z]{3,}\s+[A-Za-z]{3,}", text)
    ]
    assert untranslated == []
    same = [
        k for k in english if english[k] == chinese[k] and re.search(r"[a-z]{3,} [a-z]", english[k])
    ]
    assert same == []


def test_chinese_prose_uses_full_width_punctuation():
    """No ASCII comma or colon right after a Chinese character ("的,", "：" not ":")."""
    offenders = {
        key: text
        for key, text in strings("zh").items()
        if re.search(r"[\u4e00-\u9fff][,;:?!]", text)
    }
    assert offenders == {}


def test_the_symbols_and_code_names_survive_translation():
    """Terms kept as written in every language: the glossary's symbols and code names."""
    english, chinese = strings(DEFAULT_LANGUAGE), strings("zh")
    keep = ["W_hh", "d_model", "d_head", "[CLS]", "[SEP]", "[UNK]", "softmax", "RoPE", "ALiBi"]
    keep += ["clip_grad_norm_", "num_hiddens", "b_f", "float32", "WordPiece", "LayerNorm"]
    for key, text in english.items():
        for term in keep:
            if term in text:
                assert term in chinese[key], (key, term)


# --- the current language ----------------------------------------------------------------


def test_languages_name_english_and_simplified_chinese():
    assert LANGUAGES == {"en": "English", "zh": "简体中文"}
    assert DEFAULT_LANGUAGE == "en"


def test_the_default_language_is_english():
    assert current_language() == "en"
    assert t("nav.home") == "Home"


def test_t_follows_the_current_language():
    set_language("zh")
    assert current_language() == "zh"
    assert t("nav.home") == strings("zh")["nav.home"] == "首页"
    assert t("heads.tokens", n=7) == "7 个词元："
    set_language("en")
    assert t("nav.home") == "Home"


def test_an_explicit_language_beats_the_current_one():
    with using_language("zh"):
        assert t("nav.home", language="en") == "Home"
    assert t("nav.home", language="zh") == "首页"


def test_t_keeps_key_positional_only_and_accepts_a_param_named_key():
    with using_language("zh"):
        text = t("heads.strongest", layer=3, head=1, query="it", key="animal", weight=0.64)
    assert "it → animal" in text
    assert "0.64" in text
    with pytest.raises(TypeError):
        t(key="nav.home")  # type: ignore[call-arg]


def test_using_language_restores_the_previous_language():
    set_language("zh")
    with using_language("en") as inner:
        assert inner == "en"
        assert t("nav.home") == "Home"
        with using_language("zh"):
            assert t("nav.home") == "首页"
        assert current_language() == "en"
    assert current_language() == "zh"


def test_using_language_restores_even_after_an_error():
    with pytest.raises(RuntimeError), using_language("zh"):
        raise RuntimeError("boom")
    assert current_language() == "en"


@pytest.mark.parametrize("code", ["xx", "fr", "", None, 3, "zh-nope", "english"])
def test_an_unknown_language_falls_back_to_english(code):
    assert set_language(code) == "en"
    assert current_language() == "en"
    assert t("nav.home") == "Home"
    with using_language(code) as used:
        assert used == "en"
        assert t("app.sentence_label") == "Your sentence"


@pytest.mark.parametrize("code", ["zh", "ZH", " zh "])
def test_a_known_code_is_accepted_whatever_its_case_and_spaces(code):
    assert set_language(code) == "zh"


def test_a_missing_key_in_a_language_falls_back_to_english(monkeypatch):
    partial = dict(strings("zh"))
    del partial["nav.home"]
    real = strings

    def fake(language="en"):
        return partial if language == "zh" else real(language)

    monkeypatch.setattr("components.i18n.strings", fake)
    with using_language("zh"):
        assert t("nav.home") == "Home"
        assert t("nav.heads") == "注意力头"


def test_an_unknown_key_is_an_error_not_a_silent_key():
    with pytest.raises(KeyError), using_language("zh"):
        t("no.such.key")


def test_each_thread_has_its_own_language():
    """Sessions run in their own script threads: one visitor's choice never leaks."""
    set_language("zh")
    seen = {}

    def other_session():
        seen["start"] = current_language()
        set_language("en")
        seen["after"] = t("nav.home")

    worker = threading.Thread(target=other_session)
    worker.start()
    worker.join()
    assert seen == {"start": "en", "after": "Home"}
    assert t("nav.home") == "首页"
