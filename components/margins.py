"""Margins wide enough for a chart's tick labels, worked out before the browser draws it.

Plotly's `automargin` measures an axis's labels after drawing the chart and, when they
need more room than the margins give, draws the whole chart again. A chart whose margins
start tight is therefore drawn twice, on every rerun: in Chromium a 20-token one-head
heatmap took ~80 ms instead of ~40, the per-head statistics ~230 ms instead of ~70.
The margins estimated here from the labels themselves are wide enough for the fonts
browsers use for plotly's default family (Verdana, Arial, DejaVu Sans), so plotly keeps
them and draws once. `automargin` stays on: where a font runs wider than estimated, the
labels still get their room, at the cost of the second drawing.

Plain data in, numbers out; no plotly, no st.*.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

# Advance widths in em, as wide as Verdana's (the widest of the fonts above), so that an
# estimate errs towards a few pixels of spare room, never towards a second drawing.
_NARROW = dict.fromkeys("ijl'|!.,:;", 0.34) | dict.fromkeys("frtI()[]{}` ", 0.45)
_WIDE = {"m": 0.98, "w": 0.85, "M": 0.87, "W": 1.0, "%": 1.1, "@": 1.0}
_DIGIT = 0.64
_LOWER = 0.63
_UPPER = 0.78
_OTHER_ASCII = 0.7
_OTHER = 0.8  # accented and other scripts: a little wider than a Latin letter
_FULL_WIDTH = 1.05  # CJK, full-width forms
_EMOJI = 1.3
# A line of text is this many font sizes high (plotly's line height is 1.3).
_LINE = 1.3
# Between an axis and its tick labels, and between the labels and the axis title.
_LABEL_GAP_PX = 8
_TITLE_GAP_PX = 2
# Plotly adds up to 12 px to whatever an axis or colour bar asks of a margin.
_PUSH_PAD_PX = 12
_SPARE_PX = 2


def char_em(ch: str) -> float:
    """One character's estimated width, in multiples of the font size."""
    if ch in _NARROW:
        return _NARROW[ch]
    if ch in _WIDE:
        return _WIDE[ch]
    if ch.isascii():
        if ch.isdigit():
            return _DIGIT
        if ch.islower():
            return _LOWER
        if ch.isupper():
            return _UPPER
        return _OTHER_ASCII
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0.0  # accents, zero-width joiners and marks take no room of their own
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return _EMOJI if unicodedata.category(ch) == "So" else _FULL_WIDTH
    return _OTHER


def text_px(text: str, size: float) -> float:
    """The estimated width of one line of plotly text (its entities, e.g. `&lt;`, read
    as the characters they stand for) at font `size` px."""
    return size * _text_em(str(text))


# The same labels come back on every chart of a rerun (a sentence's tokens on both axes
# of several charts, "L0 H1" on every grid of heads): ~1,000 characters a rerun.
@lru_cache(maxsize=4096)
def _text_em(text: str) -> float:
    return sum(char_em(ch) for ch in html.unescape(text))


def widest_px(labels: Iterable[str], size: float) -> float:
    return max((text_px(label, size) for label in labels), default=0.0)


def title_px(title: str | None, size: float) -> float:
    """Room an axis title takes across its axis (one line), with its gap to the labels."""
    return size * _LINE + _TITLE_GAP_PX if title else 0.0


def _margin(content_px: float) -> int:
    return math.ceil(content_px + _PUSH_PAD_PX + _SPARE_PX)


def beside_axis(
    labels: Iterable[str], size: float, title: str | None = None, title_size: float = 14
) -> int:
    """Margin for a vertical axis's horizontal tick labels, and its title beside them."""
    return _margin(widest_px(labels, size) + _LABEL_GAP_PX + title_px(title, title_size))


def above_slanted(
    labels: Iterable[str],
    size: float,
    angle: float,
    title: str | None = None,
    title_size: float = 14,
) -> int:
    """Margin above (or below) a horizontal axis whose tick labels are turned by `angle`
    degrees: each label's width reaches out by sin(angle), its line height by cos(angle)."""
    turn = math.radians(abs(angle))
    reach = widest_px(labels, size) * math.sin(turn) + size * _LINE * math.cos(turn)
    return _margin(reach + _LABEL_GAP_PX + title_px(title, title_size))


def slanted_overhang(last_label: str, size: float, angle: float) -> int:
    """Margin for how far the last tick label of a slanted axis reaches past its end."""
    return _margin(text_px(last_label, size) * math.cos(math.radians(abs(angle))))


# A colour bar stands 2 % of the plot's width to the right of the plot (plotly's x = 1.02).
# That width is the browser's to choose: room is kept for plots up to this wide.
PLOT_PX_ALLOWED = 1600


def colorbar_px(
    title: str | None,
    tick_labels: Iterable[str],
    size: float,
    thickness: float,
    plot_px: float = PLOT_PX_ALLOWED,
) -> int:
    """Room a vertical colour bar right of the plot takes: its tick labels beside it
    (plotly's 10 px pads on either side), or its title on top when that is wider."""
    labels = 10 + thickness + 6 + widest_px(tick_labels, size) + 10
    heading = text_px(title or "", size) + 26
    return _margin(0.02 * plot_px + max(labels, heading))
