"""Charts for a projector: the same figure, its text and its height half as large again.

Presenter mode enlarges charts through the figure itself rather than by scaling the page
under it (CSS zoom or transform): plotly reads the pointer's position unscaled, so on a
scaled chart the hover label and a drag-zoom land on other cells than the ones under
the pointer. Plain data in, plain data out; no st.*.
"""

from __future__ import annotations

from typing import Any

SCALE = 1.5
# The projector's screen is 1920×1080: no chart drawn for it is taller, so a chart can be
# shown whole. Its ceiling leaves room for the page's top bar (the menu: 3.75rem, 82.5 px
# at presenter mode's 22 px text, measured in Chromium), so a chart scrolled to just
# under that bar is all in view.
SCREEN_HEIGHT = 1080
TOP_BAR = 84
MAX_HEIGHT = SCREEN_HEIGHT - TOP_BAR
# Plotly's own defaults, used where a figure leaves a size unset.
DEFAULT_FONT_SIZE = 12
DEFAULT_HOVER_FONT_SIZE = 13
DEFAULT_HEIGHT = 450
# Margins scaled with the text; "pad" and "autoexpand" are left as they are.
MARGIN_SIDES = frozenset("lrtb")


def projected_height(height: float, scale: float = SCALE, ceiling: int = MAX_HEIGHT) -> int:
    """A chart's height on the projector: `scale` times its own, at most `ceiling`. A chart
    that would be taller keeps every row and all its text size: its cells are drawn
    smaller (and a grid chart labels every other row, or fewer, where labels would touch)."""
    return min(round(height * scale), ceiling)


def for_projector(figure: dict, scale: float = SCALE) -> dict:
    """A copy of `figure` (as `fig.to_plotly_json()` gives it) with every font size, the
    height and the margins multiplied by `scale` (the height at most MAX_HEIGHT, see
    projected_height); the data unchanged."""
    scaled = {
        "data": [_scaled_fonts(trace, scale) for trace in figure.get("data", [])],
        "layout": _scaled_fonts(figure.get("layout", {}), scale),
    }
    layout = scaled["layout"]
    # Sizes left unset take plotly's defaults, enlarged too.
    layout["font"] = {"size": DEFAULT_FONT_SIZE * scale, **layout.get("font", {})}
    hover = layout.get("hoverlabel", {})
    hover_font = {"size": DEFAULT_HOVER_FONT_SIZE * scale, **hover.get("font", {})}
    layout["hoverlabel"] = {**hover, "font": hover_font}
    layout["height"] = projected_height(layout.get("height") or DEFAULT_HEIGHT, scale)
    if "margin" in layout:
        layout["margin"] = {
            side: value * scale if side in MARGIN_SIDES and _is_number(value) else value
            for side, value in layout["margin"].items()
        }
    return {**figure, **scaled}


def _scaled_fonts(node: Any, scale: float) -> Any:
    """`node` with the size of every font in it (font, tickfont, textfont, title.font …)
    scaled; dicts and lists of dicts are copied, arrays and other values shared."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key.endswith("font") and isinstance(value, dict) and "size" in value:
                value = {**value, "size": _times(value["size"], scale)}
            out[key] = _scaled_fonts(value, scale)
        return out
    if isinstance(node, list) and any(isinstance(item, dict) for item in node):
        return [_scaled_fonts(item, scale) for item in node]
    return node


def _times(size: Any, scale: float) -> Any:
    if _is_number(size):
        return size * scale
    if isinstance(size, (list, tuple)):
        return [s * scale if _is_number(s) else s for s in size]
    return size


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
