"""The lab "kv": generating with a KV cache, against recomputing every step. The cache
grows one row a step, gives the same tokens and logits, and costs less per step."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.labels import token_labels
from components.masks import cache_growth_figure
from components.positional import curves_figure
from components.ui.charts import show_chart
from components.ui.linked import linked_slider
from components.ui.runs import masks as runs
from components.ui.runs.shared import load_tokenizer
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import kv_cache
from models.nets.transformer import TransformerConfig

# The KV cache chart shows the newest rows: where it grows.
CACHE_TAIL = 24


def per_step_figure(cached: np.ndarray, full: np.ndarray, measure: str):
    """One measure per generation step, with the cache and recomputing everything."""
    return curves_figure(
        {t("masks.kv.with_cache"): cached, t("masks.kv.without_cache"): full},
        np.arange(1, len(cached) + 1),
        title=t(f"masks.kv.{measure}_title"),
        x_title=t("masks.kv.step_axis"),
        y_title=t(f"masks.kv.{measure}_axis"),
        y_axis=dict(rangemode="tozero"),
    )


def draw(ids: list[int], cfg: TransformerConfig) -> None:
    """`ids` is the sentence the prompt repeats, `cfg` the lesson's random Transformer's."""
    st.subheader(t("masks.kv.title"))
    n = len(ids)
    context_col, new_col, step_col = st.columns(3)
    context = linked_slider(context_col, t("masks.kv.context"), 8, 384, 128, key="kv_context")
    n_new = linked_slider(new_col, t("masks.kv.new"), 4, 64, 16, key="kv_new")
    shown_step = min(linked_slider(step_col, t("masks.kv.step"), 1, 64, 1, key="kv_step"), n_new)
    prompt = (ids * (context // n + 1))[:context]
    with st.spinner(t("masks.measuring")):
        run = runs.generation(tuple(prompt), n_new)
        seconds_cached, seconds_full = runs.step_timings(context, n_new)
    tokenizer = load_tokenizer()
    st.caption(t("masks.kv.generated", context=context, n_new=n_new))
    st.text(" · ".join(tokenizer.id_to_token(i) for i in run.cached_ids))
    same = run.cached_ids == run.full_ids
    steps_axis = np.arange(1, n_new + 1)
    # Whole decades from just below the smallest difference to above the 1e-5 line.
    difference_decades = [
        float(np.floor(np.log10(max(float(run.logit_difference.min()), 1e-12)))),
        float(max(-4.0, np.ceil(np.log10(max(float(run.logit_difference.max()), 1e-12))))),
    ]
    all_tokens = [tokenizer.id_to_token(i) for i in prompt + run.cached_ids]
    for column, (name, cached) in zip(
        st.columns(2),
        (("K", run.keys[shown_step - 1]), ("V", run.values[shown_step - 1])),
        strict=True,
    ):
        labels = token_labels(all_tokens[: len(cached)])
        with column:
            show_chart(
                cache_growth_figure(
                    cached[-CACHE_TAIL:],
                    labels[-CACHE_TAIL:],
                    1,
                    title=t("masks.kv.cache_title", name=name, step=shown_step, rows=len(cached)),
                    x_title=t("masks.axis.dim"),
                    y_title=t("masks.kv.cache_axis", shown=min(CACHE_TAIL, len(cached))),
                    value_name=name,
                ),
                key=f"kv_cache_{name.lower()}",
                summary=t(
                    "masks.kv.cache_summary",
                    name=name,
                    step=shown_step,
                    rows=len(cached),
                    first=int(run.cache_rows[0]),
                    last=int(run.cache_rows[-1]),
                ),
                data={"position": all_tokens[: len(cached)], name: cached},
            )
    macs_cached, macs_full = run.macs_cached / 1e6, run.macs_full / 1e6  # as the chart draws
    offer(
        "masks.kv",
        macs_cached=macs_cached,
        macs_full=macs_full,
        context=context,
        n_new=n_new,
        per_pair=kv_cache.pair_multiply_adds(cfg),
    )
    kv_left, kv_right = st.columns(2)
    with kv_left:
        show_chart(
            per_step_figure(seconds_cached * 1e3, seconds_full * 1e3, "time"),
            key="kv_time",
            summary=t(
                "masks.kv.time_summary",
                cached=float(np.median(seconds_cached) * 1e3),
                full=float(np.median(seconds_full) * 1e3),
            ),
            data={
                "step": steps_axis,
                "ms_with_cache": seconds_cached * 1e3,
                "ms_without_cache": seconds_full * 1e3,
            },
        )
    with kv_right:
        if held_back("kv_macs"):  # a tour asks what a step costs before showing it
            show_held_back()
        else:
            show_chart(
                per_step_figure(macs_cached, macs_full, "macs"),
                key="kv_macs",
                summary=t(
                    "masks.kv.macs_summary",
                    cached=float(run.macs_cached[-1] / 1e6),
                    full=float(run.macs_full[-1] / 1e6),
                    total_cached=float(run.macs_cached.sum() / 1e6),
                    total_full=float(run.macs_full.sum() / 1e6),
                ),
                data={
                    "step": steps_axis,
                    "multiply_adds_with_cache": run.macs_cached,
                    "multiply_adds_without_cache": run.macs_full,
                },
            )
    kv_left, kv_right = st.columns(2)
    with kv_left:
        show_chart(
            curves_figure(
                {t("masks.kv.difference"): run.logit_difference},
                steps_axis,
                title=t("masks.kv.difference_title"),
                x_title=t("masks.kv.step_axis"),
                y_title="max |Δ logit|",
                log_y=True,
                y_axis=dict(range=difference_decades, dtick=1),
                level=1e-5,
            ),
            key="kv_difference",
            summary=t(
                "masks.kv.difference_summary",
                worst=float(run.logit_difference.max()),
                same=t("masks.kv.same") if same else t("masks.kv.different"),
            ),
            data={"step": steps_axis, "max_logit_difference": run.logit_difference},
        )
    kv_right.caption(
        t(
            "masks.kv.explain",
            same=t("masks.kv.same") if same else t("masks.kv.different"),
            worst=float(run.logit_difference.max()),
            n_new=n_new,
            ratio=float(run.macs_full.sum() / run.macs_cached.sum()),
            time_ratio=float(seconds_full.sum() / seconds_cached.sum()),
            head=float(cfg.d_model * cfg.d_vocab / 1e6),
            per_pair=kv_cache.pair_multiply_adds(cfg),
            per_row=kv_cache.row_multiply_adds(cfg),
            crossover=kv_cache.row_multiply_adds(cfg) // kv_cache.pair_multiply_adds(cfg),
        )
    )
