"""Room codes: short enough to read off a projector, long enough not to be guessed.

Six characters of an alphabet without look-alikes (no 0/O, 1/I/L, 2/Z, 5/S, 8/B, 6/G),
23**6 ≈ 1.5e8 codes. A student may type one in lower case, with spaces or a dash.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

ALPHABET = "ACDEFHJKMNPQRTUVWXY3479"
LENGTH = 6
_LOOSE = re.compile(r"[\s\-_.]+")


def new_code(taken: Callable[[str], bool] = lambda code: False) -> str:
    while True:
        code = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
        if not taken(code):
            return code


def normal_code(typed: str) -> str:
    """The code as stored: upper case, separators dropped (at most a code's length kept, so
    what a visitor types costs nothing to look up)."""
    return _LOOSE.sub("", str(typed)[: 4 * LENGTH]).upper()[: LENGTH + 1]


def looks_like_code(typed: str) -> bool:
    code = normal_code(typed)
    return len(code) == LENGTH and all(c in ALPHABET for c in code)


def spaced(code: str) -> str:
    """As shown on a projector: two groups of three."""
    half = LENGTH // 2
    return f"{code[:half]} {code[half:]}"
