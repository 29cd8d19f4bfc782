"""Part ②, "Attention without softmax: what is lost": one head's causal softmax pattern, the
implicit pattern of linear attention and retention's (q kᵀ) ⊙ D, for the same queries and
keys, with the decay γ on a slider; and what the numbers say about each."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrence.patterns import (
    mean_max_weight,
    negative_share,
    pattern_grid,
    row_sums,
    uniform_entropy_bits,
)
from components.summaries import number
from components.ui.charts import load_grid_charts, show_chart
from components.ui.linked import linked_slider
from components.ui.parts.recurrence.reading import Reading, head_control, head_name
from components.ui.runs import recurrence as runs
from components.ui.tour import held_back, offer, show_held_back
from models.analysis.attention_stats import entropy_bits, strongest_link
from models.analysis.recurrence_cost import decay_reach

GAMMAS = (0.5, 1.0)  # the slider's range
GAMMA_STEP = 2.0**-10  # RetNet's γ = 1 − 2^(−5−h) lie on it exactly
REACH_LEVEL = 0.01
_GAMMA_HEAD = "_rr_gamma_head"  # the head whose default γ the slider last started from


def _controls(n_heads: int) -> tuple[int, float]:
    head_col, gamma_col = st.columns(2)
    head = head_control(head_col, t("recurrence.patterns.head"), n_heads)
    default = runs.retnet_gammas()[head]
    # Another head starts again from its own RetNet γ; a link's γ is kept on arrival.
    if st.session_state.get(_GAMMA_HEAD, head) != head:
        st.session_state["rr_gamma"] = default
    st.session_state[_GAMMA_HEAD] = head
    gamma = linked_slider(
        gamma_col,
        t("recurrence.patterns.gamma", default=default),
        *GAMMAS,
        default,
        key="rr_gamma",
        step=GAMMA_STEP,
        format="%.5f",
    )
    return head, float(gamma)


def _measures(softmax: np.ndarray, linear: np.ndarray, retention: np.ndarray, gamma: float):
    sums = row_sums(retention)
    return dict(
        sum_low=float(sums.min()),
        sum_high=float(sums.max()),
        negative=negative_share(retention),
        linear_sum_error=float(np.abs(row_sums(linear) - 1).max()),
        linear_min=float(linear[np.tri(len(linear), dtype=bool)].min()),
        softmax_entropy=float(entropy_bits(softmax)),
        linear_entropy=float(entropy_bits(linear)),
        uniform_entropy=uniform_entropy_bits(len(linear)),
        softmax_max=mean_max_weight(softmax),
        linear_max=mean_max_weight(linear),
        reach=decay_reach(gamma, REACH_LEVEL),
    )


def _reach_text(reach: float, form: str) -> str:
    """How far back retention reaches, as a metric's value (`form` "value") or a clause of
    the explanation ("clause")."""
    if np.isinf(reach):
        return t(f"recurrence.patterns.reach_never_{form}")
    return t(f"recurrence.patterns.reach_{form}", k=reach)


def _weights_summary(pattern: np.ndarray, labels: list[str], name: str) -> str:
    """A pattern of weights in [0, 1]: its strongest link between two tokens, how much a
    row's largest weight takes on average, and its mean entropy."""
    link = strongest_link(pattern)
    numbers = dict(
        name=name, mean_max=number(mean_max_weight(pattern)), entropy=number(entropy_bits(pattern))
    )
    if link is None:
        return t("recurrence.patterns.weights_summary_one", **numbers)
    query, key, weight = link
    return t(
        "recurrence.patterns.weights_summary",
        query=labels[query],
        key=labels[key],
        weight=number(weight),
        **numbers,
    )


def _pattern_chart(pattern, read: Reading, title: str, key: str, *, signed=False, summary=None):
    labels = [f"{i}:{token}" for i, token in enumerate(read.tokens)]
    value = t("recurrence.patterns.weight")
    show_chart(
        pattern_grid(
            pattern,
            read.tokens,
            title=title,
            query_title=t("recurrence.patterns.query"),
            key_title=t("recurrence.patterns.key"),
            value_title=value,
            signed=signed,
        ),
        key=key,
        summary=summary or _weights_summary(pattern, labels, title),
        data={"query": labels, "key": labels, "weight": pattern},
    )


def _metrics(m: dict, gamma: float) -> None:
    shown = (
        ("sums_metric", f"{m['sum_low']:.2f} … {m['sum_high']:.2f}"),
        ("negative_metric", f"{m['negative']:.0%}"),
        ("entropy_metric", f"{m['softmax_entropy']:.2f} / {m['linear_entropy']:.2f}"),
        ("reach_metric", _reach_text(m["reach"], "value")),
    )
    for column, (name, value) in zip(st.columns(len(shown)), shown, strict=True):
        column.metric(t(f"recurrence.patterns.{name}", gamma=gamma), value)


def draw(read: Reading) -> None:
    st.subheader(t("recurrence.patterns.title"))
    st.caption(t("recurrence.patterns.lead"))
    n_heads = read.q.shape[0]
    head, gamma = _controls(n_heads)
    softmax = read.softmax_pattern[head]
    linear = runs.linear_patterns(read.ids)[head]
    retained = runs.retention_pattern(read.ids, head, gamma)
    retention, decay = retained["pattern"], retained["decay"]
    m = _measures(softmax, linear, retention, gamma)
    offer("recurrence.patterns", head=head, gamma=gamma, linear=linear, retention=retention)
    # Held back for a tour's question: the retention chart, and the numbers that say its sums.
    hidden = held_back("rr_retention")
    load_grid_charts()
    name = head_name(head)
    softmax_col, linear_col = st.columns(2)
    with softmax_col:
        _pattern_chart(
            softmax, read, t("recurrence.patterns.softmax_title", head=name), "rr_softmax"
        )
    with linear_col:
        _pattern_chart(linear, read, t("recurrence.patterns.linear_title", head=name), "rr_linear")
    retention_col, decay_col = st.columns(2)
    with retention_col:
        if hidden:
            show_held_back()
        else:
            _pattern_chart(
                retention,
                read,
                t("recurrence.patterns.retention_title", head=name, gamma=gamma),
                "rr_retention",
                signed=True,
                summary=t(
                    "recurrence.patterns.retention_summary",
                    low=number(retention.min()),
                    high=number(retention.max()),
                    sum_low=number(m["sum_low"]),
                    sum_high=number(m["sum_high"]),
                    negative=m["negative"],
                ),
            )
    with decay_col:
        far = len(read.tokens) - 1
        _pattern_chart(
            decay,
            read,
            t("recurrence.patterns.decay_title", gamma=gamma),
            "rr_decay",
            summary=t(
                "recurrence.patterns.decay_summary",
                gamma=gamma,
                far=far,
                smallest=number(gamma**far),
            ),
        )
    if hidden:
        return
    _metrics(m, gamma)
    st.caption(
        t(
            "recurrence.patterns.numbers",
            sum_error=number(m["linear_sum_error"]),
            linear_min=number(m["linear_min"]),
            softmax_max=m["softmax_max"],
            linear_max=m["linear_max"],
            softmax_entropy=m["softmax_entropy"],
            linear_entropy=m["linear_entropy"],
            uniform=m["uniform_entropy"],
        )
    )
    entropies = dict(softmax_entropy=m["softmax_entropy"], linear_entropy=m["linear_entropy"])
    flatter = m["linear_entropy"] > m["softmax_entropy"]
    st.markdown(
        t(
            "recurrence.patterns.explain",
            gamma=gamma,
            reach=_reach_text(m["reach"], "clause"),
            negative=m["negative"],
            sum_low=m["sum_low"],
            sum_high=m["sum_high"],
            linear_clause=t(
                f"recurrence.patterns.{'flatter' if flatter else 'not_flatter'}", **entropies
            ),
        )
    )
