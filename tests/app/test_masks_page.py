"""The masks lesson, driven through AppTest as a visitor would, for every mask kind."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from conftest import chart, chart_specs, heatmap_grid, messages, open_lesson, texts

from components.masks_steps import STAGE_STEPS, STAGES
from models.analysis.masks import KINDS, STEPS

PARTS = ("masks", "scale", "kv", "cost")

SENTENCE = "the cat sat on the mat because it was warm"  # 10 tokens
SECOND = "我爱你"  # 3 tokens
# These tests check the masks' mechanics on word tokens: on the lesson's random model
# (trained weights: tests/app/test_trained_weights.py).
RANDOM = "random"
INDUCTION = "induction-transformer"
STEP_CHARTS = [f"mask_step_{step}" for step in STEPS]

# The charts of each of the lesson's parts, one tab each; the first is open by default, on
# the stepper's first stage (its query row, and X behind the full matrices' expander).
PART_CHARTS = {
    "masks": {"mask_row", "mask_step_x_query", "mask_leakage"},
    "scale": {"scale_variance", "scale_entropy", "scale_max"},
    "kv": {"kv_cache_k", "kv_cache_v", "kv_time", "kv_macs", "kv_difference"},
    "cost": {"cost_time", "cost_memory"},
}


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


def _values(array) -> np.ndarray:
    """Plotly 7 may send arrays as base64 (`bdata`)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
    return np.asarray(array)


def _chart_keys(at) -> set[str]:
    return {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}


def _open_part(at, part: str):
    """Open another tab of the lesson in the same session, as a click on it does."""
    at.session_state["mask_part"] = part
    return at.run()


def _open_stage(at, stage: str):
    """Show another stage of the stepper in the same session, as choosing it does."""
    at.session_state["mask_step"] = stage
    return at.run()


@pytest.mark.parametrize("kind", KINDS)
def test_every_mask_kind_draws_every_step_and_masks_exactly_what_it_should(kind):
    at = open_lesson(
        "masks", SENTENCE, mask_weights=RANDOM, mask_kind=kind, second=SECOND, mask_window="1"
    )
    _no_failure(at)
    assert PART_CHARTS["masks"] == _chart_keys(at)  # the first tab, open by default
    # Every step's heatmap, one stage at a time, each with that stage's query row.
    drawn = set()
    for stage in STAGES:
        _no_failure(_open_stage(at, stage))
        stage_charts = {f"mask_step_{step}" for step in STAGE_STEPS[stage]}
        assert _chart_keys(at) == {"mask_row", *stage_charts, "mask_leakage"}
        drawn |= stage_charts
        assert all(
            "Infinity" not in json.dumps(s) and "NaN" not in json.dumps(s) for s in chart_specs(at)
        )
    assert drawn == set(STEP_CHARTS)
    _open_stage(at, "mask")
    masked_scores = chart(at, "mask_step_hook_attn_scores")
    _open_stage(at, "softmax")
    assert all(
        "Infinity" not in json.dumps(s) and "NaN" not in json.dumps(s) for s in chart_specs(at)
    )
    pattern = chart(at, "mask_step_hook_pattern")
    weights = heatmap_grid(pattern["data"][0]["z"])
    n = len(SENTENCE.split())
    expected_shape = {"cross": (n, 3), "padding": (n, n)}.get(kind, (n, n))
    assert weights.shape == expected_shape
    assert f"({expected_shape[0]} × {expected_shape[1]})" in pattern["layout"]["title"]["text"]
    hidden = np.isnan(weights)
    q, k = np.indices(weights.shape)
    expected_hidden = {
        "none": np.zeros_like(hidden),
        "cross": np.zeros_like(hidden),
        "causal": k > q,
        "window": np.abs(q - k) > 1,
        "prefix": (k > q) & (k >= 3),
        "padding": (k >= 3) | (q >= 3),
    }[kind]
    assert (hidden == expected_hidden).all()
    # The masked cells are drawn by a grey overlay that says −∞ before softmax, 0 after.
    if hidden.any():
        masked = masked_scores["data"][1]
        assert "−∞" in json.dumps(masked["text"], ensure_ascii=False)
        assert "0" in json.dumps(pattern["data"][1]["text"])
    seeing = ~hidden.all(axis=1)
    np.testing.assert_allclose(np.nansum(weights, axis=1)[seeing], 1.0, atol=1e-5)
    assert any(m.startswith("Checked on these numbers") for m in at.caption.values)


def test_the_vector_steps_summaries_name_a_dimension_even_when_the_matrix_is_square():
    # The shipped induction model reads 32 tokens and has d_model 32: X is 32 × 32, the
    # shape of the scores, and still a row of vectors per token.
    at = open_lesson("masks", SENTENCE, mask_weights=INDUCTION)
    _no_failure(at)
    assert "(32 × 32)" in chart(at, "mask_step_x_query")["layout"]["title"]["text"]
    vectors = []
    for stage in ("x", "qkv", "z"):
        _no_failure(_open_stage(at, stage))
        vectors += [c for c in at.caption.values if c.startswith("largest \\|value\\|")]
    assert len(vectors) == 5  # X, Q, K, V, z
    assert all("dimension" in c and "masked" not in c for c in vectors)


def _step_specs(at) -> dict[str, dict]:
    """The step heatmaps the open stage draws."""
    return {key: chart(at, key) for key in STEP_CHARTS if key in _chart_keys(at)}


def test_step_charts_built_once_are_the_ones_built_afresh_in_every_language_and_head():
    from components.ui.runs.masks import step_charts

    # The shipped induction model reads its task's own sequence, whatever is typed.
    at = open_lesson("masks", SENTENCE, mask_weights=INDUCTION, mask_step="qkv")
    _no_failure(at)
    first = _step_specs(at)
    assert set(first) == {"mask_step_hook_q", "mask_step_hook_k", "mask_step_hook_v"}
    summaries = [c for c in at.caption.values if c.startswith("largest")]
    at.text_input("sentence").input("a dog ran far").run()  # the same charts, remembered
    assert _step_specs(at) == first
    assert [c for c in at.caption.values if c.startswith("largest")] == summaries
    at.session_state["lang"] = "zh"
    at.run()
    _no_failure(at)
    chinese = _step_specs(at)
    assert chinese["mask_step_hook_q"]["layout"]["title"]["text"].startswith("② Q = X·W_Q（")
    for key in first:
        assert [tr["z"] for tr in chinese[key]["data"]] == [tr["z"] for tr in first[key]["data"]]
    at.session_state["mask_head"] = 1
    at.run()
    other_head = _step_specs(at)
    assert (
        other_head["mask_step_hook_q"]["data"][0]["z"]
        != chinese["mask_step_hook_q"]["data"][0]["z"]
    )
    # Built afresh, without what was remembered: the same charts.
    step_charts.cache_clear()
    at.run()
    assert _step_specs(at) == other_head


def test_padding_draws_the_batch_and_says_the_pad_rows_see_nothing():
    at = open_lesson(
        "masks", SENTENCE, mask_weights=RANDOM, mask_kind="padding", second=SECOND, mask_step="z"
    )
    _no_failure(at)
    batch = "\n".join([SENTENCE.replace(" ", " · "), "我 · 爱 · 你" + " · [PAD]" * 7])
    assert batch in texts(at)
    assert any("may look at nothing" in m for m in messages(at))
    z = heatmap_grid(chart(at, "mask_step_hook_z")["data"][0]["z"])
    assert (z[3:] == 0).all() and (np.abs(z[:3]) > 0).any()


def test_the_pad_rows_note_says_what_minus_1e9_would_give_them_a_uniform_row():
    at = open_lesson("masks", SENTENCE, mask_weights=RANDOM, mask_kind="padding", second=SECOND)
    _no_failure(at)
    note = next(m for m in messages(at) if "may look at nothing" in m)
    keys = 10  # the batch is padded to the longer sentence's 10 tokens
    assert f"puts {1 / keys:.4g} (1/{keys}) on each of its {keys} keys" in note, note


def test_cross_attention_queries_the_sentence_and_keys_the_second_one():
    at = open_lesson(
        "masks", SENTENCE, mask_weights=RANDOM, mask_kind="cross", second=SECOND, mask_step="qk"
    )
    _no_failure(at)
    scores = chart(at, "mask_step_qk")["data"][0]
    assert scores["x"] == ["0:我", "1:爱", "2:你"]
    assert scores["y"][1] == "1:cat"
    assert chart(at, "mask_row")["data"][0]["x"] == ["0:我", "1:爱", "2:你"]
    _no_failure(_open_stage(at, "qkv"))
    assert chart(at, "mask_step_hook_k")["data"][0]["y"] == ["0:我", "1:爱", "2:你"]


def test_the_leakage_chart_shows_exact_zeros_before_the_edit_only_with_the_causal_mask():
    at = open_lesson("masks", SENTENCE, leak_pos="6")
    _no_failure(at)
    causal, none = chart(at, "mask_leakage")["data"]
    causal_y, none_y = _values(causal["y"]), _values(none["y"])
    assert (causal_y[:6] == 0).all() and causal["text"][:6] == ["0"] * 6
    assert (none_y[:6] > 1e-3).all()
    assert causal_y[6] > 0
    assert "the · cat · sat · on · the · mat · elephant · it · was · warm" in texts(at)


def test_the_leakage_caption_says_what_bert_was_trained_for_not_that_it_cannot_write():
    at = open_lesson("masks", SENTENCE, leak_pos="6")
    _no_failure(at)
    causal = _values(chart(at, "mask_leakage")["data"][0]["y"])
    caption = next(c for c in at.caption.values if "bit for bit the same" in c)
    assert f"{int((causal[:6] == 0).sum())} of 6 are bit for bit the same" in caption
    assert "cannot generate" not in caption
    assert "was not trained to write left to right" in caption


def test_an_empty_second_sentence_asks_for_one_and_the_rest_still_draws():
    at = open_lesson("masks", SENTENCE, mask_weights=RANDOM, mask_kind="cross", second="   ")
    _no_failure(at)
    assert any("needs a second sentence" in m for m in messages(at))
    assert "mask_leakage" in _chart_keys(at)
    assert not {*STEP_CHARTS, "mask_row"} & _chart_keys(at)


def test_a_hostile_second_sentence_is_cleaned_noted_and_escaped():
    hostile = "<b>x</b>\u200b <script>alert(1)</script>"
    at = open_lesson(
        "masks", SENTENCE, mask_weights=RANDOM, mask_kind="cross", second=hostile, mask_step="qk"
    )
    _no_failure(at)
    assert any("invisible character" in m for m in messages(at))
    keys = chart(at, "mask_step_qk")["data"][0]["x"]
    assert keys and not any("<" in label for label in keys)
    assert "&lt;" in "".join(keys)


def test_the_labs_show_measured_numbers_that_match_their_claims():
    at = open_lesson("masks", SENTENCE, kv_context="40", kv_new="8", kv_step="3", mask_part="scale")
    _no_failure(at)
    variance = chart(at, "scale_variance")["data"]
    d_k, measured = _values(variance[0]["x"]), _values(variance[0]["y"])
    assert list(d_k) == [2**i for i in range(10)]
    assert np.abs(measured / d_k - 1).max() < 0.05
    assert np.abs(_values(variance[1]["y"]) - 1).max() < 0.05  # after ÷√d_k
    unscaled, scaled = (_values(tr["y"]) for tr in chart(at, "scale_max")["data"][:2])
    assert unscaled[-1] > 0.8 > scaled[-1]
    # The KV cache: same tokens both ways, logits within 1e-5, one more cached row per step.
    _no_failure(_open_part(at, "kv"))
    difference = _values(chart(at, "kv_difference")["data"][0]["y"])
    assert len(difference) == 8 and (difference < 1e-5).all()
    assert any("identical at every step" in c for c in at.caption.values)
    keys = chart(at, "kv_cache_k")
    assert "K (layer 0, head 0) after step 3: 42 rows" in keys["layout"]["title"]["text"]
    assert (
        "V (layer 0, head 0) after step 3: 42 rows"
        in chart(at, "kv_cache_v")["layout"]["title"]["text"]
    )
    assert len(keys["data"][0]["y"]) == 24 and keys["data"][0]["y"][-1].startswith("41:")
    with_cache, without = (_values(tr["y"]) for tr in chart(at, "kv_macs")["data"])
    assert (without > with_cache).all() and np.ptp(with_cache) < np.ptp(without)
    _no_failure(_open_part(at, "cost"))
    memory = chart(at, "cost_memory")["data"]
    lengths, attention = _values(memory[0]["x"]), _values(memory[0]["y"])
    np.testing.assert_allclose(attention[1:] / attention[:-1], (lengths[1:] / lengths[:-1]) ** 2)


def test_the_kv_caption_says_how_each_ways_multiply_adds_grow_as_the_chart_draws_them():
    at = open_lesson("masks", SENTENCE, kv_context="40", kv_new="8", mask_part="kv")
    _no_failure(at)
    with_cache, without = (_values(tr["y"]) * 1e6 for tr in chart(at, "kv_macs")["data"])
    # Cached: affine in the length, the same increase every step (one more key to meet).
    growth = np.diff(with_cache)
    per_pair = round(float(growth[0]))
    assert per_pair > 0
    np.testing.assert_allclose(growth, per_pair, atol=1e-3)
    # Recomputing: quadratic, the n × n pairs give constant second differences of 2·per_pair.
    np.testing.assert_allclose(np.diff(without, 2), 2 * per_pair, atol=1e-3)
    caption = next(c for c in at.caption.values if "Why it works" in c)
    assert "nearly flat" not in caption
    assert f"a constant plus {per_pair:,}·n:" in caption and f"{per_pair:,}·n²" in caption
    per_row = round(float(np.diff(without)[0] - (2 * 40 + 1) * per_pair))
    assert f"{per_row:,}·n +" in caption and f"past n = {per_row // per_pair}" in caption


@pytest.mark.parametrize("part", sorted(PART_CHARTS))
def test_each_part_opens_from_a_link_and_draws_only_its_own_charts(part):
    at = open_lesson("masks", SENTENCE, mask_part=part)
    _no_failure(at)
    assert _chart_keys(at) == PART_CHARTS[part]
    assert [tab.label for tab in at.tabs][PARTS.index(part)] == at.session_state["mask_part"]
    # Typing reruns the open part, on the new sentence.
    at.text_input("sentence").input("a dog ran far").run()
    _no_failure(at)
    assert _chart_keys(at) == PART_CHARTS[part]
    assert "a · dog · ran · far" in texts(at)


def test_a_part_named_in_the_other_language_or_not_at_all_is_understood_or_noted():
    at = open_lesson("masks", SENTENCE, mask_part="4 · KV 缓存")  # a Chinese visitor's link
    _no_failure(at)
    assert _chart_keys(at) == PART_CHARTS["kv"]
    assert at.session_state["mask_part"] == "4 · KV cache"
    at = open_lesson("masks", SENTENCE, mask_part="6 · nowhere")
    _no_failure(at)
    assert _chart_keys(at) == PART_CHARTS["masks"]
    assert any(m.startswith("The link") for m in messages(at))


def test_the_open_part_stays_open_when_the_language_changes():
    at = open_lesson("masks", SENTENCE, mask_part="cost")
    at.session_state["lang"] = "zh"
    at.run()
    _no_failure(at)
    assert at.session_state["mask_part"] == "5 · 开销"
    assert _chart_keys(at) == PART_CHARTS["cost"]


def test_a_link_setting_a_labs_control_opens_that_labs_tab():
    at = open_lesson("masks", SENTENCE, kv_new="8")  # a link made before the lesson had tabs
    _no_failure(at)
    assert _chart_keys(at) == PART_CHARTS["kv"]
    assert len(_values(chart(at, "kv_difference")["data"][0]["y"])) == 8
