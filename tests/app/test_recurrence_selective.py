"""Part ③ of "Recurrence returns", the selective state, driven through AppTest as a visitor
would: its numbers held to the selective SSM run here from scratch on the lesson's inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from conftest import chart, chart_keys, grid_values, messages, open_lesson

from components.i18n import LANGUAGES, t
from components.labels import markdown_literal
from components.ui.sentence import DEFAULT_SENTENCES
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

CHARTS = {"rr_selective_grid_selective", "rr_selective_grid_lti", "rr_selective_lines"}
EDITED = "the cat sat on the mat because it was tired"


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m == t("app.error") for m in messages(at))


def _kept_fractions(sentence: str, scale: float) -> dict[str, np.ndarray]:
    """exp(scale · Δ_t · A) averaged over the state `[pos, d_inner]`, for both layers, from
    the layers' own Δ on the lesson Transformer's first-block input, in float64."""
    tokenizer = Tokenizer()
    ids = list(tokenizer.encode(sentence, 40).ids)
    model = Transformer(
        TransformerConfig(d_vocab=tokenizer.vocab_size, positional="sinusoidal", causal=True)
    )
    _, cache = model.run_with_cache(ids)
    X = torch.from_numpy(np.array(cache["blocks.0.hook_resid_pre"]))
    kept = {}
    for name, selective in (("selective", True), ("lti", False)):
        layer = SelectiveSSM(SSMConfig(d_model=64, selective=selective), seed=0)
        _, trace = layer.run_with_cache(X)
        A = -np.exp(layer.A_log.detach().numpy().astype(np.float64))
        delta = scale * trace["ssm_delta"].astype(np.float64)
        kept[name] = np.exp(delta[:, :, None] * A[None]).mean(axis=2)
    return kept


def _metrics(at) -> list[float]:
    return [float(m.value) for m in at.metric]


def _explanation(at) -> str:
    return next(m.value for m in at.markdown if "Gu & Dao 2023" in m.value)


def _spreads(kept: np.ndarray) -> tuple[float, float]:
    means = kept.mean(axis=1)
    return float(means.max() - means.min()), float((kept.max(axis=0) - kept.min(axis=0)).max())


def _quoted_one_of(text: str, names: list[str], values: np.ndarray, target: float) -> bool:
    """The text quotes a token whose value is `target` (to float32 rounding): a near-tie
    may be named either way."""
    close = np.flatnonzero(np.abs(values - target) <= 1e-6)
    return any(markdown_literal(names[i]) in text for i in close)


def _check_numbers(at, sentence: str, scale: float) -> None:
    kept = _kept_fractions(sentence, scale)
    tokens = Tokenizer().encode(sentence, 40).tokens
    names = [f"{i}:{token}" for i, token in enumerate(tokens)]
    # The heatmap of the kept fraction: the first 32 channels, a row per channel.
    drawn = grid_values(chart(at, "rr_selective_grid_selective"), 1)
    np.testing.assert_allclose(drawn, kept["selective"][:, :32].T, rtol=2e-5)
    drawn_lti = grid_values(chart(at, "rr_selective_grid_lti"), 1)
    assert (drawn_lti == drawn_lti[:, :1]).all(), "the time-invariant layer keeps one fraction"
    # The spreads shown: measured, and exactly 0 for the time-invariant layer.
    shown = _metrics(at)
    expected = [*_spreads(kept["selective"]), *_spreads(kept["lti"])]
    assert shown[2:] == [0.0, 0.0]
    np.testing.assert_allclose(shown[:2], expected[:2], rtol=6e-3)
    if len(tokens) > 1:
        assert shown[0] > 0 and shown[1] > 0
    # The tokens named: where the selective state keeps least and most, averaged.
    text = _explanation(at)
    means = kept["selective"].mean(axis=1)
    assert _quoted_one_of(text, names, means, means.min())
    assert _quoted_one_of(text, names, means, means.max())


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_default_sentence_shows_the_measured_spreads_and_tokens(language):
    at = open_lesson("recurrence", lang=language, rr_part="selective")
    _no_failure(at)
    assert chart_keys(at) == CHARTS
    assert t("recurrence.selective.title", language=language) in [s.value for s in at.subheader]
    _check_numbers(at, DEFAULT_SENTENCES[language], 1.0)
    text = _explanation(at)
    assert t("recurrence.selective.explain_paper", language=language) in text


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_edited_sentence_is_read_again(language):
    at = open_lesson("recurrence", lang=language, rr_part="selective")
    at.text_input(key="sentence").set_value(EDITED).run()
    _no_failure(at)
    assert chart_keys(at) == CHARTS
    _check_numbers(at, EDITED, 1.0)
    assert chart(at, "rr_selective_grid_selective")["panels"][0]["columns"][:3] == [
        "0:the",
        "1:cat",
        "2:sat",
    ]


def test_delta_factor_from_the_link_scales_every_step_size():
    at = open_lesson("recurrence", EDITED, rr_part="selective", rr_dt_scale="0.5")
    _no_failure(at)
    assert at.slider(key="rr_dt_scale").value == 0.5
    scale = 10**0.5
    _check_numbers(at, EDITED, scale)
    text = _explanation(at)
    kept, base = _kept_fractions(EDITED, scale), _kept_fractions(EDITED, 1.0)
    assert f"Δ × {scale:.3g}" in text
    mean, base_mean = kept["selective"].mean(), base["selective"].mean()
    assert mean < base_mean  # a larger Δ keeps less
    quoted = re.search(r"is ([0-9.e+-]+) at Δ × 3\.16, against ([0-9.e+-]+) at × 1", text)
    assert quoted is not None, text
    np.testing.assert_allclose([float(v) for v in quoted.groups()], [mean, base_mean], rtol=6e-3)


def test_smaller_delta_keeps_more_and_a_link_past_the_range_is_clamped():
    at = open_lesson("recurrence", EDITED, rr_part="selective")
    at.slider(key="rr_dt_scale").set_value(-1.0).run()
    _no_failure(at)
    _check_numbers(at, EDITED, 0.1)
    kept, base = _kept_fractions(EDITED, 0.1), _kept_fractions(EDITED, 1.0)
    assert kept["selective"].mean() > base["selective"].mean()
    far = open_lesson("recurrence", EDITED, rr_part="selective", rr_dt_scale="7")
    _no_failure(far)
    assert far.slider(key="rr_dt_scale").value == 1.0
    _check_numbers(far, EDITED, 10.0)


def test_one_token_and_presenter_mode_draw_the_part():
    at = open_lesson("recurrence", "cat", rr_part="selective", present="1")
    _no_failure(at)
    assert chart_keys(at) == CHARTS
    _check_numbers(at, "cat", 1.0)
    assert t("recurrence.selective.one_token") in messages(at)
