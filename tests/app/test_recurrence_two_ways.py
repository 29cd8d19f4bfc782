"""Part ① of "Recurrence returns", "The same output, two ways", driven through AppTest: the
outputs drawn equal the models' run here from scratch, the differences shown are the ones
drawn, the state sizes and step counts are the formulas', in both languages and from links."""

from __future__ import annotations

import math
import re

import numpy as np
import torch
from conftest import chart, chart_keys, grid_values, messages, open_lesson, plotly_array

from models.nets.linear_attention import linear_attention_parallel, linear_attention_recurrent
from models.nets.retention import default_gammas, retention_chunkwise, retention_parallel
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

SENTENCE = "The animal didn't cross the street because it was too tired"
EDITED = "a dog ran far away from home"
CHARTS = {"rr_la_forms", "rr_ret_forms", "rr_ssm_forms", "rr_state", "rr_time", "rr_steps"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _open(sentence: str | None = SENTENCE, **query):
    at = open_lesson("recurrence", sentence, rr_part="two_ways", **query)
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))
    return at


def _expected(sentence: str, chunk: int = 4) -> dict[str, torch.Tensor]:
    """Every form's output on `sentence` in float64, computed here from the tokenizer up:
    the lesson's random causal Transformer's first block, then the models."""
    tokenizer = Tokenizer()
    ids = tokenizer.encode(sentence, 40).ids
    cfg = TransformerConfig(d_vocab=tokenizer.vocab_size, positional="sinusoidal", causal=True)
    _, cache = Transformer(cfg, seed=0).run_with_cache(list(ids))
    q, k, v = (torch.tensor(cache[f"blocks.0.attn.hook_{n}"], dtype=torch.float64) for n in "qkv")
    X = torch.tensor(cache["blocks.0.hook_resid_pre"], dtype=torch.float64)
    gammas = default_gammas(cfg.n_heads)
    ssm = SelectiveSSM(SSMConfig(d_model=64), seed=0)
    la_recurrent, la_state, la_norm = linear_attention_recurrent(q, k, v)
    return dict(
        n=len(ids),
        la=linear_attention_parallel(q, k, v)[1],
        la_recurrent=la_recurrent,
        la_state=la_state[-1].numel() + la_norm[-1].numel(),
        ret=retention_parallel(q, k, v, gammas)[1],
        ret_chunkwise=retention_chunkwise(q, k, v, gammas, chunk),
        ssm=ssm(X, mode="sequential"),
        kv=k.numel() + v.numel(),
    )


def _metrics(at) -> dict[str, float]:
    return {m.label: float(m.value) for m in at.metric}


def _close(drawn: np.ndarray, expected: torch.Tensor) -> None:
    """float32 as drawn against float64 computed here."""
    scale = float(expected.abs().max())
    np.testing.assert_allclose(drawn, expected.numpy(), rtol=0, atol=1e-4 * scale)


def _captions(at) -> list[str]:
    """The captions as read (a summary is written escaped, as literal markdown)."""
    return [c.value.replace("\\", "") for c in at.caption]


def test_the_outputs_drawn_are_the_models_and_the_differences_shown_are_the_ones_drawn():
    at = _open()
    assert chart_keys(at) >= CHARTS
    expected = _expected(SENTENCE)
    la, ret, ssm = (chart(at, key) for key in ("rr_la_forms", "rr_ret_forms", "rr_ssm_forms"))
    _close(grid_values(la, 0), expected["la"][0])
    _close(grid_values(la, 1), expected["la_recurrent"][0])
    _close(grid_values(ret, 0), expected["ret"][0])
    _close(grid_values(ret, 2), expected["ret_chunkwise"][0])
    _close(grid_values(ssm, 0), expected["ssm"])
    _close(grid_values(ssm, 1), expected["ssm"])
    # Every form's panel, every metric: float32 rounding, not a different number.
    metrics = _metrics(at)
    assert len(metrics) == 4
    for value in metrics.values():
        assert 0 <= value < 1e-4
    # The summary quotes the largest difference between the panels it draws.
    drawn = np.abs(grid_values(ssm, 0) - grid_values(ssm, 1)).max()
    assert f"differ by at most {drawn:.2e} (float32)" in " ".join(_captions(at))
    # Every SSM channel is drawn: the metric is the largest difference drawn; the attention
    # metrics take every head, the chart one.
    shown = {m.label: m.value for m in at.metric}
    assert shown["Selective SSM, sequential loop"] == f"{drawn:.2e}"
    la_drawn = np.abs(grid_values(la, 0) - grid_values(la, 1)).max()
    assert metrics["Linear attention, recurrent"] >= float(f"{la_drawn:.2e}")


def test_the_state_carried_is_what_the_tensors_hold_and_only_the_kv_cache_grows():
    at = _open()
    expected = _expected(SENTENCE)
    n = expected["n"]
    measured = next(c for c in _captions(at) if c.startswith("Measured on this run"))
    assert f"after your {n} tokens" in measured
    assert f"hold {expected['la_state']} floats" in measured
    assert f"{4 * 16 * 16} (retention's S), {64 * 16} (the SSM's h)" in measured
    assert f"cache {expected['kv']}. The same as the formulas" in measured
    lines = {trace["name"]: trace for trace in chart(at, "rr_state")["data"]}
    kv = lines["softmax attention's KV cache"]
    x, y = plotly_array(kv["x"]), plotly_array(kv["y"])
    np.testing.assert_array_equal(y, 2 * x * 4 * 16)
    assert n in x.tolist() and x[0] == 1 and x[-1] == 4096
    la = plotly_array(lines["linear attention"]["y"])
    assert set(la.tolist()) == {expected["la_state"]}
    [marker] = chart(at, "rr_state")["layout"]["shapes"]
    assert marker["x0"] == marker["x1"] == n


def test_training_steps_follow_the_chunk_size_a_link_sets():
    at = _open(rr_chunk="3", rr_head="2")
    assert at.slider(key="rr_chunk").value == 3
    assert at.selectbox(key="rr_head").value == 2
    expected = _expected(SENTENCE, chunk=3)
    ret = chart(at, "rr_ret_forms")
    assert ret["panels"][2]["title"] == "chunkwise, B = 3"
    _close(grid_values(ret, 2), expected["ret_chunkwise"][2])
    _close(grid_values(chart(at, "rr_la_forms"), 0), expected["la"][2])
    lines = {trace["name"]: trace for trace in chart(at, "rr_steps")["data"]}
    chunks = lines["chunkwise: ⌈T / B⌉, B = 3"]
    x = plotly_array(chunks["x"])
    np.testing.assert_array_equal(plotly_array(chunks["y"]), [math.ceil(n / 3) for n in x])
    scan = lines["associative scan: ⌈log2 T⌉"]
    np.testing.assert_array_equal(
        plotly_array(scan["y"]), [math.ceil(math.log2(n)) for n in plotly_array(scan["x"])]
    )
    np.testing.assert_array_equal(plotly_array(lines["recurrence: T"]["y"]), x)


def test_the_time_per_token_is_measured_at_the_visitors_length_and_a_long_one():
    at = _open(EDITED)
    n = _expected(EDITED)["n"]
    bars = chart(at, "rr_time")["data"]
    assert [bar["name"] for bar in bars] == [
        f"one recurrent step, L = {n}",
        f"parallel form recomputed, L = {n}",
        "one recurrent step, L = 512",
        "parallel form recomputed, L = 512",
    ]
    for bar in bars:
        assert bar["x"] == ["linear attention", "retention", "selective SSM"]
        assert (plotly_array(bar["y"]) > 0).all()
    assert any(c.startswith("Median of 21 runs back to back") for c in _captions(at))


def test_typing_a_new_sentence_redraws_the_outputs():
    at = _open()
    at.text_input("sentence").input(EDITED).run()
    assert not at.exception, [e.value for e in at.exception]
    expected = _expected(EDITED)
    la = chart(at, "rr_la_forms")
    assert la["panels"][0]["rows"] == expected["n"]
    _close(grid_values(la, 1), expected["la_recurrent"][0])


def test_in_chinese_every_text_and_chart_title_is_chinese():
    at = _open(lang="zh")
    assert at.selectbox(key="rr_head").label == "显示的注意力头（线性注意力与保留机制）"
    assert all(CJK.search(label) for label in _metrics(at))
    assert chart(at, "rr_la_forms")["title"] == "线性注意力，头 H0：输出 z"
    assert chart(at, "rr_state")["layout"]["title"]["text"].startswith("从一个词元")
    assert any(m.value.startswith("**为什么两种形式") for m in at.markdown)


def test_presenter_mode_draws_the_part():
    at = _open(present="1")
    assert chart_keys(at) >= CHARTS


def test_the_articles_claim_is_checked_against_the_state_the_tensors_hold():
    at = _open()
    expected = _expected(SENTENCE)
    claims = next(m.value for m in at.markdown if "source articles" in m.value)
    # Retention's state after the last token: one d_head × d_head matrix per head.
    cfg = TransformerConfig(d_vocab=Tokenizer().vocab_size)
    state = cfg.n_heads * cfg.d_head**2
    assert f"retention's state is {state} floats at every length" in claims
    assert f"L = {expected['n']}" in claims
    assert "cannot test" in claims  # no verdict on trained quality from random weights
