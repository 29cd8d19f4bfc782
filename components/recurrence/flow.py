"""Figures of "Gradient flow through time": how much of a loss at the last token reaches each
earlier input, against how many tokens before the loss it is, for the recurrent lesson's
models and the two layers of this lesson.

The chart is the recurrent lesson's (components/recurrent.py lines_figure, log y), with two
more lines in colours of their own; the numbers under it are ratios of the drawn values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure
from components.palette import PURPLE, SKY_BLUE
from components.recurrent import MODEL_COLORS, lines_figure
from components.summaries import lines_summary, number

# The colours of this lesson's two layers, beside components/recurrent.py's four.
NEW_COLORS = (PURPLE, SKY_BLUE)


def distance_curves(
    grad_X: Mapping[str, np.ndarray], tau: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`{model: (k, ‖∂L/∂X_{τ−k}‖)}` for k = 0 … τ: each model's gradient by distance."""
    distance = np.arange(tau + 1)
    return {
        name: (distance, np.asarray(values, dtype=np.float64)[tau::-1])
        for name, values in grad_X.items()
    }


def reach_ratio(values: np.ndarray, tau: int) -> float:
    """‖∂L/∂X_0‖ / ‖∂L/∂X_τ‖: what reaches the first input, for one unit at the loss's own.
    NaN where the loss's own input gets no gradient (0) or a value is not finite."""
    values = np.asarray(values, dtype=np.float64)
    first, own = values[0], values[tau]
    if not (np.isfinite(first) and np.isfinite(own)) or own == 0:
        return float("nan")
    return float(first / own)


def per_step_factor(ratio: float, tau: int) -> float:
    """The geometric mean factor per step, ratio^(1/τ) (NaN for τ = 0 or no ratio)."""
    if tau < 1 or not np.isfinite(ratio) or ratio < 0:
        return float("nan")
    return float(ratio ** (1 / tau))


def model_colors(names: Sequence[str], new_names: Sequence[str]) -> dict[str, str]:
    """The recurrent lesson's colours for its models, this lesson's for `new_names`."""
    colors = {name: MODEL_COLORS[name] for name in names if name in MODEL_COLORS}
    colors.update(zip(new_names, NEW_COLORS, strict=False))
    return colors


def flow_figure(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    hover: Sequence[str],
    new_names: Sequence[str],
    title: str = "",
    x_title: str = "",
) -> PlainFigure:
    """The lines on a log axis; `hover` names the token at each distance (escaped)."""
    return lines_figure(
        curves,
        title=title,
        x_title=x_title,
        y_title="‖∂L/∂X_t‖",
        colors=model_colors(list(curves), new_names),
        hover_labels={name: list(hover) for name in curves},
    )


def flow_summary(curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """Each line from the loss's own token to the first one (components/summaries.py)."""
    return lines_summary(curves)


def ratios_text(ratios: Mapping[str, float]) -> str:
    """ "RNN 1.2e-05, LSTM 0.003, …": every model's ratio, three significant digits."""
    return ", ".join(f"{name} {number(value)}" for name, value in ratios.items())
