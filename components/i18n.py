"""UI strings: assets/i18n/<language>/*.json, one file per part of the app, merged.

A lesson keeps its strings in its own file, so lessons never edit each other's.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

I18N_DIR = Path(__file__).resolve().parent.parent / "assets" / "i18n"
DEFAULT_LANGUAGE = "en"


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


def t(key: str, /, language: str = DEFAULT_LANGUAGE, **params) -> str:
    """The string for `key`, formatted with `params`; English where a language lacks it."""
    text = strings(language).get(key) or strings(DEFAULT_LANGUAGE)[key]
    return text.format(**params) if params else text
