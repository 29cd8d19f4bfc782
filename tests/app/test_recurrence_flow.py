"""Part ④ of "Recurrence returns", gradient flow through time, driven through AppTest as a
visitor would: every line held to a gradient computed here from scratch, by autograd through
each model's own forward pass, on the lesson's inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import chart, chart_keys, messages, open_lesson, plotly_array

from components.i18n import LANGUAGES, t
from components.ui.sentence import DEFAULT_SENTENCES
from models.analysis.transformer_backward import transformer_from_embeddings
from models.nets.linear_attention import LinearAttentionConfig, LinearAttentionLayer
from models.nets.recurrent import Recurrent, RecurrentConfig, readout
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

EDITED = "the cat sat on the mat because it was tired"
NUMBER = r"(-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)"  # as components.summaries.number writes


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m == t("app.error") for m in messages(at))


def _grad(forward, X: torch.Tensor) -> np.ndarray:
    """‖∂L/∂X_t‖ for L = u · forward(X)[last], by autograd."""
    X = X.clone().requires_grad_(True)
    out = forward(X)
    loss = out[-1] @ readout(out.shape[-1]).to(out.dtype)
    (grad,) = torch.autograd.grad(loss, (X,))
    return np.linalg.norm(grad.double().numpy(), axis=1)


def _ssm_scaled(layer: SelectiveSSM, X: torch.Tensor, scale: float) -> torch.Tensor:
    """The S6 layer's equations with every Δ × scale, its scan a plain loop."""
    u = X @ layer.W_in
    delta = F.softplus(u @ layer.W_delta + layer.b_delta) * scale
    B, C = u @ layer.W_B, u @ layer.W_C
    A = -torch.exp(layer.A_log)
    h = torch.zeros(A.shape)
    ys = []
    for step in range(X.shape[0]):
        h = torch.exp(delta[step, :, None] * A) * h + (delta[step] * u[step])[:, None] * B[step]
        ys.append(h @ C[step] + layer.D * u[step])
    return torch.stack(ys) @ layer.W_out


def _expected(sentence: str, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Every model's ‖∂L/∂X_t‖ on the lesson Transformer's first-block input of `sentence`."""
    tokenizer = Tokenizer()
    ids = list(tokenizer.encode(sentence, 40).ids)
    model = Transformer(
        TransformerConfig(d_vocab=tokenizer.vocab_size, positional="sinusoidal", causal=True)
    )
    _, cache = model.run_with_cache(ids)
    X = torch.from_numpy(np.array(cache["blocks.0.hook_resid_pre"]))
    out = {
        cell.upper(): _grad(
            lambda x, cell=cell: Recurrent(
                RecurrentConfig(cell=cell, num_inputs=64, num_hiddens=64)
            )(x)["H"],
            X,
        )
        for cell in ("rnn", "lstm", "gru")
    }
    # The Transformer adds its positions itself: X − P are the token vectors it reads.
    positions = model.pos_embed(len(ids))
    out["Transformer"] = _grad(lambda x: transformer_from_embeddings(model, x - positions), X)
    ssm = SelectiveSSM(SSMConfig(d_model=64), seed=0)
    if scale == 1.0:
        out["ssm"] = _grad(lambda x: ssm(x, mode="sequential"), X)
    else:
        out["ssm"] = _grad(lambda x: _ssm_scaled(ssm, x, scale), X)
    layer = LinearAttentionLayer(LinearAttentionConfig(), seed=0)
    out["linear_attention"] = _grad(lambda x: layer(x, mode="recurrent"), X)
    return out


def _names(language: str) -> dict[str, str]:
    return {
        "RNN": "RNN",
        "LSTM": "LSTM",
        "GRU": "GRU",
        "Transformer": "Transformer",
        "ssm": t("recurrence.flow.ssm", language=language),
        "linear_attention": t("recurrence.flow.linear_attention", language=language),
    }


def _lines(at) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {
        trace["name"]: (plotly_array(trace["x"]), plotly_array(trace["y"]))
        for trace in chart(at, "rr_flow_distance")["data"]
    }


def _explanation(at) -> str:
    return next(m.value for m in at.markdown if "‖∂L/∂X_0‖" in m.value)


def _check_lines(at, sentence: str, language: str, scale: float = 1.0) -> dict:
    expected = _expected(sentence, scale)
    lines = _lines(at)
    names = _names(language)
    assert list(lines) == list(names.values())
    for model, values in expected.items():
        x, y = lines[names[model]]
        tau = len(values) - 1
        assert list(x) == list(range(tau + 1))
        np.testing.assert_allclose(y, values[::-1], rtol=2e-4, err_msg=model)
    return expected


def _check_ratios(at, expected: dict, language: str) -> None:
    text = _explanation(at)
    for model, name in _names(language).items():
        values = expected[model]
        quoted = re.search(re.escape(name) + " " + NUMBER, text)
        assert quoted is not None, (name, text)
        assert float(quoted.group(1)) == pytest.approx(values[0] / values[-1], rel=6e-3)


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_default_sentence_draws_every_models_measured_gradient(language):
    at = open_lesson("recurrence", lang=language, rr_part="flow")
    _no_failure(at)
    assert chart_keys(at) == {"rr_flow_distance"}
    expected = _check_lines(at, DEFAULT_SENTENCES[language], language)
    _check_ratios(at, expected, language)
    assert t("recurrence.flow.title", language=language) in [s.value for s in at.subheader]


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_edited_sentence_is_measured_again(language):
    at = open_lesson("recurrence", lang=language, rr_part="flow")
    at.text_input(key="sentence").set_value(EDITED).run()
    _no_failure(at)
    expected = _check_lines(at, EDITED, language)
    _check_ratios(at, expected, language)
    # The tanh RNN's per-token factor is the geometric mean of its fall.
    rnn = expected["RNN"]
    factor = (rnn[0] / rnn[-1]) ** (1 / (len(rnn) - 1))
    quoted = re.search("× " + NUMBER, _explanation(at))
    assert float(quoted.group(1)) == pytest.approx(factor, rel=6e-3)


def _first_state_kept(sentence: str) -> float:
    """Of the first token's state, the share still in the last one: the mean over channels
    and states of ∏_{s≥1} exp(Δ_s A), from the layer's own step sizes."""
    tokenizer = Tokenizer()
    ids = list(tokenizer.encode(sentence, 40).ids)
    model = Transformer(
        TransformerConfig(d_vocab=tokenizer.vocab_size, positional="sinusoidal", causal=True)
    )
    _, cache = model.run_with_cache(ids)
    layer = SelectiveSSM(SSMConfig(d_model=64), seed=0)
    _, trace = layer.run_with_cache(torch.from_numpy(np.array(cache["blocks.0.hook_resid_pre"])))
    A = -np.exp(layer.A_log.detach().numpy().astype(np.float64))
    product = np.ones(A.shape)
    for delta in trace["ssm_delta"][1:].astype(np.float64):
        product = product * np.exp(delta[:, None] * A)
    return float(product.mean())


def test_the_ssm_state_kept_from_the_first_token_is_quoted():
    at = open_lesson("recurrence", EDITED, rr_part="flow")
    _no_failure(at)
    quoted = re.search("first token's state, " + NUMBER, _explanation(at))
    assert quoted is not None
    assert float(quoted.group(1)) == pytest.approx(_first_state_kept(EDITED), rel=6e-3)


def test_delta_factor_from_the_link_changes_the_ssm_line_only():
    at = open_lesson("recurrence", EDITED, rr_part="flow", rr_dt_scale="0.5")
    _no_failure(at)
    assert at.slider(key="rr_dt_scale").value == 0.5
    scaled = _check_lines(at, EDITED, "en", scale=10**0.5)
    plain = _expected(EDITED)
    assert not np.allclose(scaled["ssm"], plain["ssm"], rtol=1e-2)
    for model in ("RNN", "LSTM", "GRU", "Transformer", "linear_attention"):
        np.testing.assert_allclose(scaled[model], plain[model], rtol=1e-12)
    assert "Δ × 3.16" in _explanation(at)


def test_one_token_says_there_is_no_distance_and_presenter_mode_draws():
    at = open_lesson("recurrence", "cat", rr_part="flow", present="1")
    _no_failure(at)
    assert t("recurrence.flow.one_token") in messages(at)
    lines = _lines(at)
    assert all(list(x) == [0] for x, _ in lines.values())
