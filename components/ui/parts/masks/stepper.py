"""Attention one step at a time: a stepper over the stages (X → Q, K, V → QKᵀ → ÷√d_k →
mask → softmax → ·V) that follows one query row, drawn large, with the stage's full
matrices and the checks on them one click away."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from components.i18n import t
from components.labels import token_labels
from components.masks import extreme_cell, row_figure
from components.masks_steps import KEY_STAGES, STAGES, StepCase, StepCharts, query_row
from components.ui.charts import show_chart
from components.ui.linked import linked_selectbox, linked_slider, set_state
from components.ui.parts.masks.reading import SHOWN_TOKENS
from components.ui.tour import held_back, offer, show_held_back

STAGE_KEY = "mask_step"
QUERY_KEY = "mask_query"
# The query followed at first: early enough in a sentence that a causal mask hides keys
# after it, late enough that it sees a few before it.
DEFAULT_QUERY = 5


def stage_label(stage: str) -> str:
    return t(f"masks.stage.{stage}")


def stage_controls(tokens: tuple[str, ...]) -> tuple[str, int]:
    """The stage (a selectbox between Back and Next) and the query row followed."""
    back_col, stage_col, next_col, query_col = st.columns([1, 3, 1, 4], vertical_alignment="bottom")
    stage = linked_selectbox(
        stage_col, t("masks.steps.title"), STAGES, STAGES[0], key=STAGE_KEY, format_func=stage_label
    )
    index = STAGES.index(stage)
    back_col.button(
        t("masks.stage.back"),
        key="mask_step_back",
        disabled=index == 0,
        on_click=set_state,
        args=({STAGE_KEY: STAGES[max(index - 1, 0)]},),
        width="stretch",
    )
    next_col.button(
        t("masks.stage.next"),
        key="mask_step_next",
        disabled=index == len(STAGES) - 1,
        on_click=set_state,
        args=({STAGE_KEY: STAGES[min(index + 1, len(STAGES) - 1)]},),
        width="stretch",
    )
    # Fixed bounds keep a shared link meaningful; past the end means the last query.
    chosen = linked_slider(
        query_col, t("masks.query"), 0, SHOWN_TOKENS - 1, DEFAULT_QUERY, key=QUERY_KEY
    )
    return stage, min(chosen, len(tokens) - 1)


def row_summary(stage: str, row: dict, token: str, labels: list[str], hidden, d_head: int):
    """The line under the row's chart, from the numbers it draws."""
    values = list(row.values())[-1]
    if stage not in KEY_STAGES:
        _, dim, size = extreme_cell(values[None, :], by_size=True)
        return t(f"masks.row.summary.{stage}", token=token, n=len(values), dim=dim, value=size)
    if stage == "mask":
        return t("masks.row.summary.mask", token=token, masked=int(hidden.sum()), keys=len(values))
    seen = ~hidden
    if not seen.any():
        return t("masks.row.summary.nothing", token=token)
    top = int(np.flatnonzero(seen)[np.argmax(values[seen])])
    return t(
        f"masks.row.summary.{stage}",
        token=token,
        key=labels[top],
        value=float(values[top]),
        before=float(row.get("q·k", values)[top]),
        sqrt=math.sqrt(d_head),
        total=float(values[seen].sum()),
    )


def draw(built: StepCharts, case: StepCase, kind: str, d_head: int) -> None:
    """The stepper on one head's steps (`built`, shared and read-only)."""
    steps = built.steps
    stage, query = stage_controls(case.query_tokens)
    allowed = np.isfinite(steps["hook_attn_scores"])
    offer(
        "masks.steps",
        tokens=case.query_tokens,
        key_tokens=case.key_tokens,
        query=query,
        stage=stage,
        kind=kind,
        d_head=d_head,
        x=steps["x_query"],
        q=steps["hook_q"],
        k=steps["hook_k"],
        v=steps["hook_v"],
        qk=steps["qk"],
        scaled=steps["scaled"],
        scores=steps["hook_attn_scores"],
        pattern=steps["hook_pattern"],
        z=steps["hook_z"],
    )
    # One chart follows the row through the stages: a tour's question holds it back at
    # every stage until it is answered.
    row_key = "mask_row"
    if held_back("mask_row"):
        show_held_back()
        return
    row = query_row(steps, stage, query)
    token = case.query_tokens[query]
    if stage in KEY_STAGES:
        labels, x_title = token_labels(list(case.key_tokens)), t("masks.axis.key")
    else:
        width = len(next(iter(row.values())))
        labels, x_title = [str(i) for i in range(width)], t("masks.axis.dim")
    hidden = ~allowed[query] if stage in ("mask", "softmax") else np.zeros(len(labels), bool)
    show_chart(
        row_figure(
            row,
            labels,
            t(f"masks.row.title.{stage}", token=token, position=query, d_head=d_head),
            x_title=x_title,
            masked=hidden,
            masked_text="−∞" if stage == "mask" else "0",
        ),
        key=row_key,
        summary=row_summary(stage, row, token, list(case.key_tokens), hidden, d_head),
        data={"column": labels, **row},
    )
    st.caption(t(f"masks.stage.explain.{stage}", d_head=d_head, sqrt=math.sqrt(d_head)))
    with st.expander(t("masks.stage.full")):
        for chart in built.of_stage(stage):
            show_chart(chart.figure, key=chart.key, summary=chart.summary, data=chart.data)
        # The checks and the explanation are one caption: every element costs the server.
        st.caption(built.checks)
    if built.fully_masked is not None:
        st.info(built.fully_masked)
