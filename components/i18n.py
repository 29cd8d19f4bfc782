"""UI strings: assets/i18n/<language>/*.json, one file per part of the app, merged.

A lesson keeps its strings in its own file, so lessons never edit each other's.

The language a string is drawn in is the current one: the frame sets it from the
visitor's choice at the top of every script run (`set_language`), and every `t()`
without an explicit `language=` follows it. It lives in a ContextVar, so each
session's script thread has its own and concurrent visitors never mix languages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

I18N_DIR = Path(__file__).resolve().parent.parent / "assets" / "i18n"
DEFAULT_LANGUAGE = "en"
# Code → the language's name in itself, as the language selector shows it.
LANGUAGES: dict[str, str] = {"en": "English", "zh": "简体中文"}

_current: ContextVar[str] = ContextVar("seqlens_language", default=DEFAULT_LANGUAGE)


@cache
def strings(language: str = DEFAULT_LANGUAGE) -> dict[str, str]:
    merged: dict[str, str] = {}
    for path in sorted((I18N_DIR / language).glob("*.json")):
        part = json.loads(path.read_text(encoding="utf-8"))
        clash = merged.keys() & part.keys()
        if clash:
            raise ValueError(f"{path.name} repeats keys: {sorted(clash)}")
        merged.update(part)
    return merged


def normalise_language(code: object) -> str:
    """A known language code, or English for anything else (None, "fr", "ZH ", …)."""
    if isinstance(code, str):
        code = code.strip().lower()
        if code in LANGUAGES:
            return code
    return DEFAULT_LANGUAGE


def current_language() -> str:
    return _current.get()


def set_language(code: object) -> str:
    """Make `code` the current language (unknown codes become English); returns the one set."""
    language = normalise_language(code)
    _current.set(language)
    return language


@contextmanager
def using_language(code: object) -> Iterator[str]:
    """Draw in `code` inside the block; the previous language comes back afterwards."""
    token = _current.set(normalise_language(code))
    try:
        yield _current.get()
    finally:
        _current.reset(token)


def t(key: str, /, language: str | None = None, **params) -> str:
    """The string for `key` in `language` (default: the current one), formatted with
    `params`; English where a language lacks it."""
    language = _current.get() if language is None else language
    text = strings(language).get(key) or strings(DEFAULT_LANGUAGE)[key]
    return text.format(**params) if params else text
