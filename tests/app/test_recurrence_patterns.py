"""Part ② of "Recurrence returns", "Attention without softmax", driven through AppTest: the
three patterns and the decay mask drawn equal numpy's, written here from the first block's
queries and keys, and the numbers under them are those patterns' own."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import chart, chart_keys, grid_values, messages, open_lesson

from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

SENTENCE = "The animal didn't cross the street because it was too tired"
EDITED = "the cat sat on the mat"
CHARTS = {"rr_softmax", "rr_linear", "rr_retention", "rr_decay"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _open(sentence: str | None = SENTENCE, **query):
    at = open_lesson("recurrence", sentence, rr_part="patterns", **query)
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))
    return at


def _retnet_gamma(head: int) -> float:
    return 1 - 2.0 ** (-5 - head)


def _patterns(sentence: str, head: int, gamma: float) -> dict[str, np.ndarray]:
    """One head's patterns in float64 numpy, from the lesson Transformer's first block."""
    tokenizer = Tokenizer()
    ids = tokenizer.encode(sentence, 40).ids
    cfg = TransformerConfig(d_vocab=tokenizer.vocab_size, positional="sinusoidal", causal=True)
    _, cache = Transformer(cfg, seed=0).run_with_cache(list(ids))
    q, k = (cache[f"blocks.0.attn.hook_{n}"][head].astype(np.float64) for n in "qk")
    n = len(ids)
    seen = np.tri(n, dtype=bool)

    def phi(x):  # elu(x) + 1
        return np.where(x > 0, x + 1, np.exp(x))

    linear = np.where(seen, phi(q) @ phi(k).T, 0.0)
    distance = np.arange(n)[:, None] - np.arange(n)[None, :]
    decay = np.where(seen, gamma ** np.clip(distance, 0, None), 0.0)
    return dict(
        softmax=cache["blocks.0.attn.hook_pattern"][head].astype(np.float64),
        linear=linear / linear.sum(axis=1, keepdims=True),
        retention=(q @ k.T) * decay,
        decay=decay,
        seen=seen,
    )


def _entropy(pattern: np.ndarray) -> float:
    rows = [-sum(p * math.log2(p) for p in row if p > 0) for row in pattern]
    return float(np.mean(rows))


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text.replace("−", "-"))]


def _metric(at, start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(start))


def _check_drawn(at, expected: dict) -> None:
    for key, name in (
        ("rr_softmax", "softmax"),
        ("rr_linear", "linear"),
        ("rr_retention", "retention"),
        ("rr_decay", "decay"),
    ):
        scale = max(1.0, float(np.abs(expected[name]).max()))
        np.testing.assert_allclose(
            grid_values(chart(at, key)), expected[name], rtol=0, atol=1e-4 * scale
        )


def test_the_patterns_drawn_are_softmax_linear_and_retention_for_the_same_queries_and_keys():
    at = _open()
    assert chart_keys(at) == CHARTS
    assert at.slider(key="rr_gamma").value == _retnet_gamma(0)
    expected = _patterns(SENTENCE, 0, _retnet_gamma(0))
    _check_drawn(at, expected)
    retention = expected["retention"]
    sums = retention.sum(axis=1)
    low, high = _numbers(_metric(at, "Retention: row sums"))
    assert low == pytest.approx(sums.min(), abs=0.006)
    assert high == pytest.approx(sums.max(), abs=0.006)
    [negative] = _numbers(_metric(at, "Retention: share of negative"))
    assert negative == pytest.approx(100 * (retention[expected["seen"]] < 0).mean(), abs=1)
    softmax_bits, linear_bits = _numbers(_metric(at, "Mean entropy"))
    assert softmax_bits == pytest.approx(_entropy(expected["softmax"]), abs=0.006)
    assert linear_bits == pytest.approx(_entropy(expected["linear"]), abs=0.006)
    [reach] = _numbers(_metric(at, "At γ"))
    assert reach == pytest.approx(math.log(0.01) / math.log(_retnet_gamma(0)), abs=0.06)


def test_a_linked_head_and_gamma_set_the_retention_pattern_and_its_reach():
    at = _open(rr_head="2", rr_gamma="0.75")
    assert at.selectbox(key="rr_head").value == 2
    assert at.slider(key="rr_gamma").value == 0.75
    _check_drawn(at, _patterns(SENTENCE, 2, 0.75))
    [reach] = _numbers(_metric(at, "At γ = 0.75000"))
    assert reach == pytest.approx(math.log(0.01) / math.log(0.75), abs=0.06)
    assert chart(at, "rr_decay")["title"] == "The decay mask D: γ^(n−m), γ = 0.75000"


def test_another_head_starts_from_its_own_retnet_gamma():
    at = _open(rr_gamma="0.6")
    assert at.slider(key="rr_gamma").value == 0.6
    at.selectbox(key="rr_head").set_value(3).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="rr_gamma").value == _retnet_gamma(3)
    _check_drawn(at, _patterns(SENTENCE, 3, _retnet_gamma(3)))
    at.slider(key="rr_gamma").set_value(1.0).run()
    assert _metric(at, "At γ = 1.00000") == "never (γ = 1)"
    decay = grid_values(chart(at, "rr_decay"))
    np.testing.assert_array_equal(decay, np.tri(len(decay)))


def test_a_gamma_outside_the_slider_is_clamped_with_a_note():
    at = _open(rr_gamma="7")
    assert at.slider(key="rr_gamma").value == 1.0
    assert any(m.startswith("The link's value for this control") for m in messages(at))


def test_typing_a_new_sentence_redraws_the_patterns():
    at = _open()
    at.text_input("sentence").input(EDITED).run()
    assert not at.exception, [e.value for e in at.exception]
    _check_drawn(at, _patterns(EDITED, 0, _retnet_gamma(0)))


def test_in_chinese_the_controls_charts_and_numbers_are_chinese():
    at = _open(EDITED, lang="zh", rr_head="1")
    assert at.selectbox(key="rr_head").label == "注意力头（取它的查询和键）"
    assert chart(at, "rr_softmax")["title"] == "softmax 注意力，头 H1"
    assert all(CJK.search(m.label) for m in at.metric)
    assert _metric(at, "在 γ").endswith("个词元")
    assert any(m.value.startswith("**softmax 做了什么。**") for m in at.markdown)
    _check_drawn(at, _patterns(EDITED, 1, _retnet_gamma(1)))


def test_presenter_mode_draws_the_part():
    at = _open(present="1")
    assert chart_keys(at) == CHARTS
