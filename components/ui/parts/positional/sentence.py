"""Part "sentence": the position table over the visitor's sentence and past its end, and
what reordering the sentence's tokens changes under each encoding."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import streamlit as st

from components.i18n import t
from components.labels import token_labels
from components.positional import (
    encoding_figure,
    error_bars_figure,
    per_token_figure,
    scheme_label,
)
from components.summaries import (
    SEPARATOR,
    bars_summary,
    encoding_summary,
    per_token_summary,
    waves_summary,
)
from components.ui.charts import show_chart
from components.ui.linked import linked_multiselect, linked_selectbox, linked_slider
from components.ui.runs.positional import learned_table, order_effects, pair_distances
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import positional as pe


def order_label(order: str) -> str:
    return t(f"positional.order.{order}")


def draw(cfg, ids: tuple[int, ...], tokens: list[str]) -> None:
    """The table over your sentence and past its end; what reordering your tokens changes."""
    n = len(tokens)
    draw_table(cfg, tokens)
    st.subheader(t("positional.order.title"))
    # A tour's question on what reordering changes waits for the learner's prediction:
    # the charts of the reordered sentence, the sentence that reads them and the classic
    # pairs below (they show the same blindness).
    hidden = held_back("positional.order")
    if n < 2:
        st.info(t("positional.order.too_short"))
        notes = []
    else:
        notes = [draw_order(ids, tokens, hidden)]
    if hidden:
        show_held_back()
        return
    pairs, schemes, pooled = zip(*pair_distances(), strict=True)
    st.caption("\n\n".join([*notes, t("positional.order.pairs")]))
    # An Arrow table is drawn as it is; rows of dicts would go through pandas first.
    table = {
        t("positional.order.pair"): pairs,
        t("positional.order.scheme"): [t(f"positional.scheme.{s}") for s in schemes],
        t("positional.order.pooled"): pooled,
    }
    st.dataframe(pa.table(table), hide_index=True, width="content")


def draw_table(cfg, tokens: list[str]) -> None:
    """The sinusoidal or learned table over the sentence and past its end, its positions
    named by the sentence's tokens."""
    n = len(tokens)
    span = min(max(2 * n, n + 32), cfg.n_ctx)
    # The lesson's first view: its controls and what they draw beside the chart, so the
    # chart opens in view.
    controls, shown = st.columns([1, 2.4])
    controls.subheader(t("positional.table.title"))
    table_scheme = linked_selectbox(
        controls,
        t("positional.table.scheme"),
        ("sinusoidal", "learned"),
        "sinusoidal",
        key="pe_table",
        format_func=scheme_label,
    )
    dims = linked_multiselect(
        controls,
        t("positional.table.dims"),
        range(cfg.d_model),
        [0, 1, 20, 40],
        key="pe_dims",
        max_selections=6,
    )
    table = pe.sinusoidal_table(span, cfg.d_model) if table_scheme == "sinusoidal" else None
    if table is None:
        table = learned_table(span)
    end_text = t("positional.sentence_end")
    positions = np.arange(span)
    dims = sorted(dims)
    offer("positional.table", table=table, scheme=table_scheme, n=n, span=span, dims=dims)
    # One chart: the table and, under it, the chosen dimensions over the same positions;
    # the download holds the whole table (the curves are columns of it).
    with shown:
        show_chart(
            encoding_figure(table, dims, n, end_text=end_text, tokens=tokens),
            key="pe_heatmap",
            summary=SEPARATOR.join(
                [encoding_summary(table, n)] + ([waves_summary(table, dims)] if dims else [])
            ),
            data={"position": positions, "dimension": np.arange(cfg.d_model), "value": table}
            | {t("chart.dim", dim=d): table[:, d] for d in dims},
        )
    controls.caption(
        t(
            f"positional.table.explain.{table_scheme}",
            span=span,
            span_last=span - 1,
            n=n,
            d_model=cfg.d_model,
        )
    )


def draw_order(ids: tuple[int, ...], tokens: list[str], hidden: bool = False) -> str:
    """What reordering the tokens changes under each encoding; returns what the charts show,
    for the one caption under them and the table below (`hidden`: offered, not drawn)."""
    order_col, seed_col = st.columns(2)
    order = linked_selectbox(
        order_col,
        t("positional.order.how"),
        ("reverse", "rotate", "shuffle"),
        "reverse",
        key="pe_order",
        format_func=order_label,
    )
    seed = linked_slider(
        seed_col,
        t("positional.order.seed"),
        0,
        99,
        0,
        key="pe_seed",
        disabled=order != "shuffle",
    )
    effects = order_effects(ids=ids, order=order, seed=seed)
    perm = effects["perm"]
    st.caption(t("positional.order.reordered"))
    st.text(" · ".join(tokens[i] for i in perm))
    max_error = {s: effects[s]["max_error"] for s in pe.SCHEMES}
    moved = {s: effects[s]["per_token"] for s in pe.SCHEMES}
    offer("positional.order", max_error=max_error, per_token=moved, order=order, perm=perm)
    if hidden:  # offered, not drawn: the charts wait for a tour question's answer
        return ""
    bar_col, token_col = st.columns([1, 2])
    largest = {scheme_label(s): max_error[s] for s in pe.SCHEMES}
    with bar_col:
        show_chart(
            error_bars_figure(
                max_error,
                title=t("positional.order.max_title"),
                y_title=t("chart.max_error"),
                threshold=1e-5,
            ),
            key="pe_order_max",
            summary=bars_summary(largest),
            data={"encoding": list(largest), "max_error": list(largest.values())},
        )
    with token_col:
        show_chart(
            per_token_figure(
                moved,
                token_labels(tokens),
                title=t("positional.order.token_title"),
                y_title=t("positional.order.token_axis"),
            ),
            key="pe_order_tokens",
            summary=per_token_summary({scheme_label(s): v for s, v in moved.items()}, tokens),
            data={"token": tokens} | {scheme_label(s): v for s, v in moved.items()},
        )
    # One caption: what the charts show, then what the table below shows.
    return t(
        "positional.order.explain",
        none=effects["none"]["max_error"],
        sinusoidal=effects["sinusoidal"]["max_error"],
        scale=effects["none"]["scale"],
    )
