"""The masks lesson's stepper: one stage at a time, following one query row, each stage's
row checked against the same row computed here with numpy from the drawn Q, K and V."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import chart, heatmap_grid, messages, open_lesson, plotly_array

from components.masks_steps import STAGES

SENTENCE = "the cat sat on the mat because it was warm"  # 10 word tokens
LM = "lm-transformer"
RANDOM = "random"


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


def _stage(at, stage: str):
    at.session_state["mask_step"] = stage
    at.run()
    _no_failure(at)
    return at


def _bars(at, stage: str) -> list[np.ndarray]:
    """The values each series of the stage's row chart draws."""
    assert at.session_state["mask_step"] == stage
    return [plotly_array(trace["y"]) for trace in chart(at, "mask_row")["data"]]


def _softmax(scores: np.ndarray) -> np.ndarray:
    seen = np.isfinite(scores)
    weights = np.zeros_like(scores)
    shifted = np.exp(scores[seen] - scores[seen].max())
    weights[seen] = shifted / shifted.sum()
    return weights


@pytest.mark.parametrize(
    ("weights", "kind", "query"),
    [(RANDOM, "causal", 6), (RANDOM, "window", 4), (LM, "causal", 12), (LM, "none", 3)],
)
def test_each_stage_draws_the_query_row_computed_with_numpy_from_q_k_v(weights, kind, query):
    at = open_lesson("masks", SENTENCE, mask_weights=weights, mask_kind=kind, mask_query=str(query))
    _no_failure(at)
    x = heatmap_grid(chart(at, "mask_step_x_query")["data"][0]["z"])
    np.testing.assert_array_equal(_bars(at, "x")[0], x[query])
    _stage(at, "qkv")
    q, k, v = (heatmap_grid(chart(at, f"mask_step_hook_{n}")["data"][0]["z"]) for n in "qkv")
    n, d_head = k.shape
    # Independently: scores, scale, mask, softmax and z for the one query row.
    qk = k @ q[query]
    scaled = qk / math.sqrt(d_head)
    keys = np.arange(n)
    allowed = {"causal": keys <= query, "window": np.abs(keys - query) <= 2}.get(
        kind, np.ones(n, bool)
    )
    masked = np.where(allowed, scaled, -np.inf)
    weights_row = _softmax(masked)
    z = weights_row @ v

    np.testing.assert_array_equal(_bars(at, "qkv")[0], q[query])
    _stage(at, "qk")
    np.testing.assert_allclose(_bars(at, "qk")[0], qk, rtol=1e-4, atol=1e-5)
    _stage(at, "scale")
    before, after = _bars(at, "scale")
    np.testing.assert_allclose(before, qk, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(after, scaled, rtol=1e-4, atol=1e-5)
    _stage(at, "mask")
    row = chart(at, "mask_row")["data"][0]
    np.testing.assert_allclose(plotly_array(row["y"]), np.where(allowed, scaled, 0), atol=1e-5)
    assert [label == "−∞" for label in row["text"]] == list(~allowed)
    _stage(at, "softmax")
    row = chart(at, "mask_row")["data"][0]
    np.testing.assert_allclose(plotly_array(row["y"]), weights_row, atol=1e-5)
    assert all(row["text"][i] == "0" for i in np.flatnonzero(~allowed))
    summary = next(c for c in at.caption.values if "gives its largest weight" in c)
    assert f"{weights_row.max():.2f}" in summary.replace("\\", "")
    _stage(at, "z")
    np.testing.assert_allclose(_bars(at, "z")[0], z, atol=1e-4)


def test_back_and_next_walk_the_stages_in_order():
    at = open_lesson("masks", SENTENCE)
    _no_failure(at)
    assert at.session_state["mask_step"] == "x"
    assert at.button(key="mask_step_back").disabled
    walked = ["x"]
    for _ in STAGES[1:]:
        at.button(key="mask_step_next").click().run()
        _no_failure(at)
        walked.append(at.session_state["mask_step"])
    assert tuple(walked) == STAGES
    assert at.button(key="mask_step_next").disabled
    assert "mask_row" in {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}
    at.button(key="mask_step_back").click().run()
    assert at.session_state["mask_step"] == "softmax"


def test_a_link_opens_a_stage_and_a_query_in_either_language_and_a_bad_stage_is_noted():
    at = open_lesson("masks", SENTENCE, mask_weights=RANDOM, mask_step="softmax", mask_query="3")
    _no_failure(at)
    assert "'on'" in chart(at, "mask_row")["layout"]["title"]["text"]
    at = open_lesson("masks", SENTENCE, mask_step="⑥ softmax：权重")  # a Chinese visitor's link
    _no_failure(at)
    assert at.session_state["mask_step"] == "softmax"
    at = open_lesson("masks", SENTENCE, mask_step="nowhere")
    _no_failure(at)
    assert at.session_state["mask_step"] == "x"
    assert any(m.startswith("The link") for m in messages(at))


def test_a_query_past_the_end_follows_the_last_token():
    at = open_lesson("masks", SENTENCE, mask_weights=RANDOM, mask_step="qk", mask_query="30")
    _no_failure(at)
    assert "'warm'" in chart(at, "mask_row")["layout"]["title"]["text"]


def test_the_first_view_follows_the_typed_sentence():
    at = open_lesson("masks", "the cat sat", mask_step="softmax")
    _no_failure(at)
    first = chart(at, "mask_row")["data"][0]
    assert first["x"][:4] == ["0:t", "1:h", "2:e", "3:␣"]
    at.text_input("sentence").input("my cat sat on the warm laptop").run()
    _no_failure(at)
    typed = chart(at, "mask_row")["data"][0]
    assert typed["x"][:4] == ["0:m", "1:y", "2:␣", "3:c"]
    assert len(typed["x"]) == len("my cat sat on the warm laptop")
    assert any(e.label.startswith("Reads your sentence") for e in at.expander)
