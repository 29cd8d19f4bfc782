"""The stepper's pure pieces: which numbers a query row is at each stage, and its bars."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from components.masks import row_figure
from components.masks_steps import KEY_STAGES, STAGE_STEPS, STAGES, query_row
from models.analysis.masks import STEPS


def _steps(rng, n: int = 5, d_head: int = 4, d_model: int = 6) -> dict[str, np.ndarray]:
    q, k, v = (rng.standard_normal((n, d_head)).astype(np.float32) for _ in range(3))
    qk = q @ k.T
    scaled = qk / np.float32(math.sqrt(d_head))
    allowed = np.tril(np.ones((n, n), bool))
    scores = np.where(allowed, scaled, -np.inf).astype(np.float32)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return {
        "x_query": rng.standard_normal((n, d_model)).astype(np.float32),
        "hook_q": q,
        "hook_k": k,
        "hook_v": v,
        "qk": qk,
        "scaled": scaled,
        "mask": np.where(allowed, 0.0, -np.inf).astype(np.float32),
        "hook_attn_scores": scores,
        "hook_pattern": weights,
        "hook_z": weights @ v,
    }


def test_every_step_belongs_to_exactly_one_stage_in_order():
    held = [step for stage in STAGES for step in STAGE_STEPS[stage]]
    assert held == list(STEPS)


def test_a_query_row_is_that_rows_numbers_at_each_stage(rng):
    steps = _steps(rng)
    query = 2
    rows = {stage: query_row(steps, stage, query) for stage in STAGES}
    np.testing.assert_array_equal(rows["x"]["x"], steps["x_query"][2])
    np.testing.assert_array_equal(rows["qkv"]["q"], steps["hook_q"][2])
    np.testing.assert_allclose(rows["qk"]["q·k"], steps["hook_k"] @ steps["hook_q"][2], rtol=1e-6)
    np.testing.assert_array_equal(rows["scale"]["q·k ÷ √d_k"], steps["scaled"][2])
    assert np.isneginf(rows["mask"]["q·k ÷ √d_k + mask"][3:]).all()
    np.testing.assert_allclose(rows["softmax"]["softmax"].sum(), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(rows["z"]["z"], steps["hook_z"][2])
    for stage in KEY_STAGES:
        assert all(len(series) == 5 for series in rows[stage].values())
    with pytest.raises(ValueError, match="unknown stage"):
        query_row(steps, "nowhere", 0)


def test_the_row_figure_sends_no_infinity_and_labels_masked_bars(rng):
    steps = _steps(rng)
    row = query_row(steps, "mask", 1)
    hidden = ~np.isfinite(row["q·k ÷ √d_k + mask"])
    labels = [f"{i}:w{i}" for i in range(5)]
    spec = row_figure(row, labels, "title", masked=hidden).to_plotly_json()
    assert "Infinity" not in json.dumps(spec, default=str)
    bars = spec["data"][0]
    assert bars["text"][2:] == ["−∞"] * 3
    assert bars["text"][:2] == [f"{v:.2f}" for v in row["q·k ÷ √d_k + mask"][:2]]
    with pytest.raises(ValueError, match="NaN or inf"):
        row_figure(row, labels, "title")  # −∞ not marked as masked
