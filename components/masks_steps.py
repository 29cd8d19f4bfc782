"""The masks lesson's step-by-step charts: one head's attention as ten heatmaps, with the
line under each, the numbers to download and the checks under them all.

Pure: the run it draws is traced and measured in components/ui/runs/masks.py, which builds
these charts once per (run, head, language) in a process and shares them with every
session (a model of a token task reads its task's own sequence whatever the visitor
types, so on the lesson's default weights the ten charts are the same on every rerun).
What is shared is only ever read (`show_chart` copies what it changes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from components.figure import PlainFigure
from components.i18n import t
from components.labels import token_labels
from components.masks import extreme_cell, shape_text, step_heatmap

# The steps whose heatmaps are rows of vectors (positions × dimensions), not query × key.
VECTOR_STEPS = ("x_query", "hook_q", "hook_k", "hook_v", "hook_z")

# The stepper's stages (the link's `mask_step` values), in order, and the heatmaps of the
# ten steps each one holds behind its "full matrices" expander.
STAGES = ("x", "qkv", "qk", "scale", "mask", "softmax", "z")
STAGE_STEPS = {
    "x": ("x_query",),
    "qkv": ("hook_q", "hook_k", "hook_v"),
    "qk": ("qk",),
    "scale": ("scaled",),
    "mask": ("mask", "hook_attn_scores"),
    "softmax": ("hook_pattern",),
    "z": ("hook_z",),
}
# The stages whose row runs over the keys (else over dimensions).
KEY_STAGES = ("qk", "scale", "mask", "softmax")


def query_row(steps: dict[str, np.ndarray], stage: str, query: int) -> dict[str, np.ndarray]:
    """What one query row is at `stage`: series name → the row's numbers. Q·Kᵀ and the
    later rows run over the keys, the others over dimensions; the "qkv" stage shows the
    query's q (K and V have a row per key: in the full matrices)."""
    if stage == "x":
        return {"x": steps["x_query"][query]}
    if stage == "qkv":
        return {"q": steps["hook_q"][query]}
    if stage == "qk":
        return {"q·k": steps["qk"][query]}
    if stage == "scale":
        return {"q·k": steps["qk"][query], "q·k ÷ √d_k": steps["scaled"][query]}
    if stage == "mask":
        return {"q·k ÷ √d_k + mask": steps["hook_attn_scores"][query]}
    if stage == "softmax":
        return {"softmax": steps["hook_pattern"][query]}
    if stage == "z":
        return {"z": steps["hook_z"][query]}
    raise ValueError(f"unknown stage {stage!r}; one of {STAGES}")


@dataclass(frozen=True)
class StepCase:
    """The traced run the step section draws, named by what it ran on: `stem` ("" for the
    lesson's random model); the queries' ids (the decoder's for cross-attention);
    `source` the encoder's ids for cross-attention, else empty; `allowed` the
    self-attention mask as bytes (`n × n` booleans); the labels of queries and keys."""

    stem: str
    cross: bool
    ids: tuple[int, ...]
    source: tuple[int, ...]
    allowed: bytes
    layer: int
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]

    @classmethod
    def masked(cls, stem, ids, allowed: np.ndarray, layer: int, tokens) -> StepCase:
        allowed = np.ascontiguousarray(allowed, dtype=bool)
        return cls(stem, False, tuple(ids), (), allowed.tobytes(), layer, *(tuple(tokens),) * 2)

    @classmethod
    def translation(cls, stem, source, target, layer: int, source_tokens, target_tokens):
        queries, keys = tuple(target_tokens), tuple(source_tokens)
        return cls(stem, True, tuple(target), tuple(source), b"", layer, queries, keys)

    def allowed_matrix(self) -> np.ndarray:
        """The self-attention mask, `n × n` (writable)."""
        n = len(self.ids)
        return np.frombuffer(self.allowed, dtype=bool).reshape(n, n).copy()

    @property
    def name(self) -> str:
        """The attention's trace prefix."""
        prefix = "decoder." if self.cross else ""
        return f"{prefix}blocks.{self.layer}.{'cross_attn' if self.cross else 'attn'}"

    @property
    def query_input(self) -> str:
        """The trace name of the input the queries were made from."""
        if self.cross:
            return f"decoder.blocks.{self.layer}.ln_cross.hook_normalized"
        return f"blocks.{self.layer}.ln1.hook_normalized"


@dataclass(frozen=True)
class StepMeasures:
    """What was measured on one head's steps for the checks under them: the queries that
    see no key, max |z − the fused attention|, and the largest weight a fully masked row
    would get with −1e9 instead of −∞ (None when every query sees a key)."""

    empty_rows: np.ndarray
    fused: float
    uniform: float | None


@dataclass(frozen=True)
class StepChart:
    key: str
    figure: PlainFigure
    summary: str
    data: dict


@dataclass(frozen=True)
class StepCharts:
    """The ten charts in order, the checks and explanation under them, the note on
    queries that see no key (None when every query sees one), and the steps they draw
    (read-only: shared by every session)."""

    charts: tuple[StepChart, ...]
    checks: str
    fully_masked: str | None
    steps: dict

    def of_stage(self, stage: str) -> tuple[StepChart, ...]:
        keys = {f"mask_step_{step}" for step in STAGE_STEPS[stage]}
        return tuple(chart for chart in self.charts if chart.key in keys)


def step_summary(
    step: str, matrix: np.ndarray, hidden: np.ndarray, rows, columns, language: str
) -> str:
    """One line naming the numbers that stand out in a step's heatmap."""
    n_hidden = int(hidden.sum())
    if step == "mask":
        return t("masks.summary.mask", language=language, masked=n_hidden, cells=hidden.size)
    if step in VECTOR_STEPS:  # by name: X is square when d_model equals the token count
        row, column, size = extreme_cell(matrix, by_size=True)
        return t(
            "masks.summary.vectors", language=language, token=rows[row], dim=column, value=size
        )
    row, column, top = extreme_cell(matrix, hidden)
    key = "masks.summary.weights" if step == "hook_pattern" else "masks.summary.scores"
    return t(
        key, language=language, query=rows[row], key=columns[column], value=top, masked=n_hidden
    )


def build_step_charts(
    case: StepCase,
    steps: dict[str, np.ndarray],
    order: Sequence[str],
    measures: StepMeasures,
    d_head: int,
    d_model: int,
    language: str,
) -> StepCharts:
    """The heatmaps of one head's `steps` in `case` (in `order`), their lines and checks."""
    allowed = np.isfinite(steps["hook_attn_scores"])
    charts = tuple(_chart(step, steps, allowed, case, d_head, d_model, language) for step in order)
    return StepCharts(
        charts,
        _checks(steps, allowed, measures, d_head, language),
        _fully_masked(allowed, measures, language),
        steps,
    )


def _chart(step, steps, allowed, case, d_head, d_model, language) -> StepChart:
    """One step's heatmap: rows are queries, or the keys' own positions for K and V;
    columns keys, or dimensions."""

    def text(key: str, **params) -> str:
        return t(key, language=language, **params)

    query_tokens, key_tokens = list(case.query_tokens), list(case.key_tokens)
    rows = key_tokens if step in ("hook_k", "hook_v") else query_tokens
    y_title = text("masks.axis.key" if step in ("hook_k", "hook_v") else "masks.axis.query")
    if step in VECTOR_STEPS:
        width = d_model if step == "x_query" else d_head
        x_labels, x_title = [str(i) for i in range(width)], text("masks.axis.dim")
        columns = list(range(width))
        # Rows of vectors are too narrow per cell to carry their numbers (hover shows them).
        options = {"cell_text": False}
    else:
        x_labels, x_title, columns = token_labels(key_tokens), text("masks.axis.key"), key_tokens
        options = {
            "mask": {"value_format": ".0f", "weights": True, "show_scale": False},
            "hook_pattern": {"masked_text": "0", "weights": True},
        }.get(step, {})
        if step in ("mask", "hook_attn_scores", "hook_pattern"):
            options = {**options, "masked": ~allowed}
    names = {"mask": "masks.mask_value", "hook_pattern": "masks.weight"}
    figure = step_heatmap(
        np.zeros(allowed.shape, np.float32) if step == "mask" else steps[step],
        text(f"masks.step.{step}", shape=shape_text(steps[step]), d_head=d_head),
        x_labels,
        token_labels(rows),
        x_title,
        y_title,
        value_name=text(names.get(step, "masks.value")),
        **options,
    )
    summary = step_summary(step, steps[step], ~allowed, rows, columns, language)
    data = {"row": rows, "column": columns, step: steps[step]}
    return StepChart(f"mask_step_{step}", figure, summary, data)


def _checks(
    steps: dict, allowed: np.ndarray, measures: StepMeasures, d_head: int, language: str
) -> str:
    """The checks on the drawn numbers, and why −∞ (two paragraphs of one caption)."""
    pattern = steps["hook_pattern"]
    seeing = np.setdiff1d(np.arange(pattern.shape[0]), measures.empty_rows)
    row_error = float(np.abs(pattern[seeing].sum(axis=1) - 1).max()) if seeing.size else 0.0
    checks = t(
        "masks.steps.checks",
        language=language,
        n_masked=int((~allowed).sum()),
        n_cells=allowed.size,
        largest_masked=float(pattern[~allowed].max()) if (~allowed).any() else 0.0,
        row_error=row_error,
        fused=measures.fused,
    )
    return checks + "\n\n" + t("masks.steps.explain", language=language, d_head=d_head)


def _fully_masked(allowed: np.ndarray, measures: StepMeasures, language: str) -> str | None:
    empty_rows = measures.empty_rows
    if not empty_rows.size:
        return None
    return t(
        "masks.fully_masked",
        language=language,
        count=empty_rows.size,
        first=int(empty_rows[0]),
        last=int(empty_rows[-1]),
        keys=allowed.shape[-1],
        uniform=measures.uniform,
    )
