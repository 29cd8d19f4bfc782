"""Whether a text is written mostly in Chinese characters (Han ideographs).

Pure text: the attention lesson asks it to offer the model that reads Chinese.
"""

from __future__ import annotations

import unicodedata

# The Unicode blocks of Han ideographs: the unified ones, extension A, the compatibility
# ones, and the supplementary planes' extensions (B onwards) and compatibility supplement.
HAN_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x323AF),
)
# More than this share of a text's letters and digits are Han: it is mostly Chinese.
MOSTLY = 0.5


def is_han(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in HAN_RANGES)


def han_share(text: str) -> float:
    """The share of Han ideographs among `text`'s letters and digits (Unicode categories
    L and N); spaces, punctuation and symbols count for neither. 0 for a text with none."""
    counted = [c for c in text if unicodedata.category(c)[0] in "LN"]
    if not counted:
        return 0.0
    return sum(map(is_han, counted)) / len(counted)


def mostly_chinese(text: str) -> bool:
    return han_share(text) > MOSTLY
