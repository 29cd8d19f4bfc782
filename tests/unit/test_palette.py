"""Colour maps a colour-blind visitor can read: the categorical colours of every line and
bar chart stay apart under simulated protanopia, deuteranopia and tritanopia."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from plotly.colors import qualitative

from components.ablation import next_token_figure, token_similarity_figure
from components.palette import ATTENTION_PALETTE, CATEGORICAL, weights_to_indices
from components.positional import SCHEME_COLORS
from components.recurrent import MODEL_COLORS

# Machado, Oliveira & Fernandes (2009), severity 1, applied to linear RGB.
DEFICIENCIES = {
    "protanopia": [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ],
    "deuteranopia": [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ],
    "tritanopia": [
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ],
}


def drawn_colours(*figures) -> list[str]:
    """The bar and line colours the figures draw, each once, in order."""
    return list(dict.fromkeys(trace.marker.color for fig in figures for trace in fig.data))


# Read off the figures the heads lesson draws when heads are switched off, so a colour
# changed in the builder is checked without touching this list.
ABLATION_COLOURS = drawn_colours(
    next_token_figure(["a", "b"], np.array([0.6, 0.4]), np.array([0.5, 0.5]), "on", "off", "p"),
    token_similarity_figure(["a", "b"], np.array([1.0, 0.9]), "cosine"),
)
# CIE76 colour difference below which two chart colours are easily confused.
MIN_DELTA_E = 15.0


def _linear(hex_colour: str) -> np.ndarray:
    srgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray) -> np.ndarray:
    to_xyz = np.array(
        [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
    )
    xyz = to_xyz @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colours, deficiency: str) -> float:
    matrix = np.array(DEFICIENCIES[deficiency])
    seen = [_lab(np.clip(matrix @ _linear(c), 0, 1)) for c in colours]
    return min(float(np.linalg.norm(a - b)) for a, b in itertools.combinations(seen, 2))


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
@pytest.mark.parametrize(
    "colours",
    [
        list(SCHEME_COLORS.values()),
        list(MODEL_COLORS.values()),
        list(CATEGORICAL[:5]),
        ABLATION_COLOURS,
    ],
    ids=["schemes", "models", "categorical", "ablation"],
)
def test_chart_colours_stay_apart_with_colour_blindness(colours, deficiency):
    assert closest_pair(colours, deficiency) >= MIN_DELTA_E


def test_the_ablation_figures_draw_two_colours_both_checked():
    """Heads on and heads off: two bars side by side, the only pair the reader compares."""
    assert len(ABLATION_COLOURS) == 2, ABLATION_COLOURS


def test_the_check_rejects_plotlys_default_red_and_green():
    assert closest_pair(qualitative.D3[:4], "protanopia") < MIN_DELTA_E


def test_attention_weights_get_darker_as_they_grow():
    """One hue, light to dark: the order reads without telling hues apart."""
    rgb = ATTENTION_PALETTE[weights_to_indices(np.linspace(0, 1, 11))].astype(float)
    lightness = rgb @ np.array([0.2126, 0.7152, 0.0722])
    assert np.all(np.diff(lightness) < 0)
