"""One colour scale for attention weights, usable by plotly and as a numpy lookup table."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image
from plotly.colors import sample_colorscale

# Every colour map is one a colour-blind visitor reads too (tests/unit/test_palette.py
# simulates the three common deficiencies):
# - one-hue sequential (attention weights), light to dark;
# - perceptually uniform Viridis and Magma (gates, gradient magnitudes);
# - red-blue diverging, centred on zero (signed values): red-blue stays apart for
#   red-green deficiencies;
# - lines and bars: the Okabe-Ito colours, chosen to stay distinct with every common
#   deficiency, instead of plotly's default categorical colours (its red and green merge).
ATTENTION_COLORSCALE = "Blues"
DIVERGING_COLORSCALE = "RdBu"
GATE_COLORSCALE = "Viridis"
MAGNITUDE_COLORSCALE = "Magma"
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, BLACK, YELLOW = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
CATEGORICAL = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, BLACK, YELLOW)
# The outline that marks a chosen cell on a blue map.
HIGHLIGHT = VERMILLION
GAP_RGB = (214, 219, 226)


def _lookup_table(scale: str, size: int = 256) -> np.ndarray:
    colors = sample_colorscale(scale, list(np.linspace(0.0, 1.0, size)), colortype="tuple")
    return np.round(np.array(colors) * 255).astype(np.uint8)


ATTENTION_LUT = _lookup_table(ATTENTION_COLORSCALE)


def weights_to_rgb(values: np.ndarray, lut: np.ndarray = ATTENTION_LUT) -> np.ndarray:
    """Map weights in [0, 1] to RGB; NaN (used for gaps) gets the gap colour."""
    gaps = np.isnan(values)
    index = np.round(np.clip(np.nan_to_num(values), 0.0, 1.0) * (len(lut) - 1))
    rgb = np.take(lut, index.astype(np.intp), axis=0)
    rgb[gaps] = GAP_RGB
    return rgb


def png_data_uri(rgb: np.ndarray) -> str:
    """A PNG as a data URI. Fastest compression: at 128 tokens level 6 took 133 ms to
    save 30 % of the bytes, level 1 took 49 ms (measured on 2 cores)."""
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(
        buffer, format="PNG", compress_level=1
    )
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
