"""The tour of "Recurrence returns", each question step opened from its link in both languages:
the chart that answers it is not sent before the learner answers and is sent after, a wrong
answer and a right one are judged as such, and the right one is the number or the choice
computed here apart: the KV cache's 2 · L · n_heads · d_head floats against retention's
n_heads · d_head², retention's rows summed from q, k and γ by hand, the smallest ratio on the
gradient-flow lines the browser then receives. The decay task is done exactly when γ^10 < 1 %."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import APP_TIMEOUT, ROOT, chart, chart_keys, messages, plotly_array
from streamlit.testing.v1 import AppTest

from components.i18n import LANGUAGES, t
from components.tours.schema import say, tours
from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

TOUR = tours()["recurrence"]
SENTENCE = "My cat sat on the warm laptop because it was tired"
STATE_STEP, SUMS_STEP, DECAY_STEP, FLOW_STEP = 2, 4, 5, 7
LONGEST = 4096  # the longest length the state chart draws


def _no_failure(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    failed = [t(key, language=lang) for key in ("app.error", "tour.failed") for lang in LANGUAGES]
    assert not [m for m in messages(at) if m in failed], messages(at)


def _step(step: int, language: str = "en") -> AppTest:
    """The step's link opened, then the sentence typed, as a learner does."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({"lang": language, "tour": "recurrence", "step": str(step)})
    at.run()
    at.text_input(key="sentence").set_value(SENTENCE).run()
    _no_failure(at)
    return at


def _panel(at: AppTest) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


def _waits(at: AppTest, chart_key: str, language: str) -> bool:
    """The chart is not sent, and the note that it waits for the answer is shown."""
    note = t("tour.answer_first", language=language)
    return chart_key not in chart_keys(at) and note in messages(at)


def _check(at: AppTest, step: int, value) -> AppTest:
    key = f"tour_answer_recurrence_{step - 1}"
    question = TOUR.steps[step - 1].question
    if question.kind == "number":
        at.number_input(key=key).set_value(value)
    else:
        next(w for w in (*at.radio, *at.selectbox) if w.key == key).set_value(value)
    at.button(key="tour_check").click().run()
    _no_failure(at)
    return at


def _again(at: AppTest) -> AppTest:
    return at.button(key="tour_ask_again").click().run()


def _judged(at: AppTest) -> tuple[bool, bool]:
    return bool(at.success), bool(at.error)


def _first_block(sentence: str) -> tuple[TransformerConfig, np.ndarray, np.ndarray]:
    """The lesson Transformer's first-block q, k `[head, pos, d_head]` on `sentence`, built
    here from the tokenizer and the model's configuration."""
    tokenizer = Tokenizer()
    ids = tokenizer.encode(sentence, 40).ids
    cfg = TransformerConfig(d_vocab=tokenizer.vocab_size, positional="sinusoidal", causal=True)
    _, cache = Transformer(cfg, seed=0).run_with_cache(list(ids))
    q, k = (np.asarray(cache[f"blocks.0.attn.hook_{n}"], dtype=np.float64) for n in "qk")
    return cfg, q, k


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_kv_cache_question_waits_for_the_answer_two_l_over_d_head(language):
    at = _step(STATE_STEP, language)
    assert _waits(at, "rr_state", language)
    explain = t("recurrence.two_ways.explain", language=language).split("{")[0]
    assert not any(m.value.startswith(explain) for m in at.markdown), "the text says it too"
    cfg, q, k = _first_block(SENTENCE)
    n = q.shape[1]
    # The step quotes the cache and the state at the sentence's length.
    assert f"{2 * n * cfg.n_heads * cfg.d_head}" in _panel(at)
    assert f"{cfg.n_heads * cfg.d_head**2}" in _panel(at)
    right = 2 * LONGEST * cfg.n_heads * cfg.d_head / (cfg.n_heads * cfg.d_head**2)

    at = _check(at, STATE_STEP, right / 10)  # the ratio at a tenth of the length: wrong
    assert _judged(at) == (False, True)
    assert "rr_state" in chart_keys(at) and not _waits(at, "rr_state", language)
    lines = {line["name"]: line for line in chart(at, "rr_state")["data"]}
    kv = plotly_array(lines[t("recurrence.two_ways.kv", language=language)]["y"])
    state = plotly_array(lines[t("recurrence.two_ways.ret", language=language)]["y"])
    assert kv[-1] / state[-1] == pytest.approx(right)
    assert f"{right:.4g}" in _panel(at)

    at = _check(_again(at), STATE_STEP, right)
    assert _judged(at) == (True, False)


def _retention_row_sums(sentence: str, head: int, gamma: float) -> np.ndarray:
    """Σ_m (q_n · k_m) γ^(n−m) over m ≤ n, for every query n: a loop over the keys."""
    _, q, k = _first_block(sentence)
    q, k = q[head], k[head]
    return np.array(
        [sum(float(q[n] @ k[m]) * gamma ** (n - m) for m in range(n + 1)) for n in range(len(q))]
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_row_sum_question_holds_retention_back_and_is_answered_from_q_and_k(language):
    at = _step(SUMS_STEP, language)
    assert at.slider(key="rr_gamma").value == 0.96875
    assert _waits(at, "rr_retention", language)
    assert {"rr_softmax", "rr_linear"} <= chart_keys(at)
    assert not at.metric, "the metrics say the row sums"
    sums = _retention_row_sums(SENTENCE, head=0, gamma=0.96875)
    options = say(TOUR.steps[SUMS_STEP - 1].question.options, language)
    right = 0 if np.allclose(sums, 1.0, atol=1e-3) else 1  # the options: yes, no
    assert right == 1, "random queries and keys: retention's rows do not sum to 1"

    at = _check(at, SUMS_STEP, 1 - right)
    assert _judged(at) == (False, True)
    assert "rr_retention" in chart_keys(at)
    panel = _panel(at)
    assert options[right] in panel
    assert f"{sums.min():.2f}" in panel and f"{sums.max():.2f}" in panel

    at = _check(_again(at), SUMS_STEP, right)
    assert _judged(at) == (True, False)


def _task_done(at: AppTest) -> bool:
    lines = [m.value for m in at.sidebar.markdown if "⬜" in m.value or "✅" in m.value]
    assert len(lines) == 1, _panel(at)
    return lines[0].startswith("✅")


def test_the_decay_task_is_done_exactly_when_ten_tokens_back_keep_under_one_percent():
    at = _step(DECAY_STEP)
    assert at.slider(key="rr_gamma").value == 0.96875
    assert not _task_done(at)
    bar = 0.01**0.1  # γ^10 = 0.01 at γ ≈ 0.63096; the slider moves by 2^-10
    below, above = np.floor(bar * 1024) / 1024, np.ceil(bar * 1024) / 1024
    assert below**10 < 0.01 < above**10
    at.slider(key="rr_gamma").set_value(above).run()
    _no_failure(at)
    assert not _task_done(at)
    at.slider(key="rr_gamma").set_value(below).run()
    _no_failure(at)
    assert _task_done(at)
    # The text follows the slider: log 0.01 / log γ tokens.
    assert f"{np.log(0.01) / np.log(below):.1f}" in _panel(at)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_flow_question_holds_the_lines_back_and_its_answer_is_the_smallest_ratio(language):
    at = _step(FLOW_STEP, language)
    assert _waits(at, "rr_flow_distance", language)
    key = f"tour_answer_recurrence_{FLOW_STEP - 1}"
    options = next(w for w in at.radio if w.key == key).options
    assert len(options) == 6

    at = _check(at, FLOW_STEP, 0)
    assert "rr_flow_distance" in chart_keys(at) and not _waits(at, "rr_flow_distance", language)
    # The lines the browser now receives: ‖∂L/∂X‖ by distance, k = 0 at the loss token.
    lines = {
        line["name"]: plotly_array(line["y"]).astype(np.float64)
        for line in chart(at, "rr_flow_distance")["data"]
    }
    assert sorted(lines) == sorted(options)
    ratios = {name: y[-1] / y[0] for name, y in lines.items()}
    weakest = min(ratios, key=ratios.get)
    right = options.index(weakest)
    assert _judged(at) == ((right == 0), (right != 0))
    assert weakest in _panel(at)
    for value in ratios.values():
        assert f"{value:.2g}" in _panel(at)

    at = _check(_again(at), FLOW_STEP, (right + 1) % len(options))
    assert _judged(at) == (False, True)
    at = _check(_again(at), FLOW_STEP, right)
    assert _judged(at) == (True, False)
