"""Part "sinusoidal": how alike two positions are, and the shift of a sinusoidal position
as a rotation."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.positional import curves_figure, matrix_figure, scheme_label
from components.summaries import lines_summary, peaks_summary, rotation_summary
from components.ui.charts import show_chart
from components.ui.linked import linked_slider
from components.ui.runs.positional import learned_table
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import positional as pe


def draw(cfg) -> None:
    """How alike two positions are, and the shift of a sinusoidal position as a rotation."""
    draw_similarity(cfg)
    draw_rotation(cfg)


def draw_similarity(cfg) -> None:
    """PE(p)·PE(p+k) from a few starting positions, sinusoidal beside learned."""
    st.subheader(t("positional.similarity.title"))
    refs = [0, 16, 64, 256]
    max_offset = 128
    sims = {
        "sinusoidal": pe.similarity_by_offset(
            pe.sinusoidal_table(cfg.n_ctx, cfg.d_model), refs, 128
        ),
        "learned": pe.similarity_by_offset(learned_table(cfg.n_ctx), refs, max_offset),
    }
    offsets = np.arange(max_offset + 1)
    offer("positional.similarity", offsets=offsets, refs=refs, d_model=cfg.d_model, **sims)
    # A tour's question on the similarity at k = 0 waits for the learner's prediction.
    if held_back("positional.similarity"):
        show_held_back()
        return
    sim_cols = st.columns(2)
    for col, (scheme, curves) in zip(sim_cols, sims.items(), strict=True):
        named = {
            t("positional.similarity.from", ref=ref): row
            for ref, row in zip(refs, curves, strict=True)
        }
        with col:
            show_chart(
                curves_figure(
                    named,
                    offsets,
                    title=t(f"positional.scheme.{scheme}"),
                    x_title=t("positional.offset"),
                    y_title="PE(p)·PE(p+k)",
                ),
                key=f"pe_similarity_{scheme}",
                summary=scheme_label(scheme)
                + ": "
                + lines_summary({name: (offsets, row) for name, row in named.items()}),
                data={"offset": offsets} | named,
            )
    spread = float(np.nanmax(np.ptp(sims["sinusoidal"], axis=0)))
    spread_learned = float(np.nanmax(np.ptp(sims["learned"], axis=0)))
    st.caption(
        t(
            "positional.similarity.explain",
            spread=spread,
            spread_learned=spread_learned,
            half=cfg.d_model // 2,
        )
    )


def draw_rotation(cfg) -> None:
    """The matrix that shifts a sinusoidal position by k, and how exactly it does."""
    st.subheader(t("positional.rotation.title"))
    k = linked_slider(st, t("positional.rotation.offset"), 1, 128, 5, key="pe_offset")
    fit = pe.rotation_fit(k, cfg.d_model, cfg.n_ctx)
    rotation = fit["rotation"]
    offer("positional.rotation", k=k, exact=fit["exact"], naive=fit["naive"])
    rot_left, rot_right = st.columns(2)
    with rot_left:
        show_chart(
            matrix_figure(
                rotation,
                title=t("positional.rotation.matrix", k=k),
                x_title=t("positional.rotation.in_dim"),
                y_title=t("positional.rotation.out_dim"),
            ),
            key="pe_rotation_matrix",
            summary=rotation_summary(rotation, k),
            data={
                "output_dimension": np.arange(cfg.d_model),
                "input_dimension": np.arange(cfg.d_model),
            }
            | {f"M_{k}": rotation},
        )
    with rot_right:
        starts = np.arange(cfg.n_ctx - k)
        errors = {
            t("positional.rotation.exact_curve"): fit["exact"],
            t("positional.rotation.naive_curve"): fit["naive"],
        }
        show_chart(
            curves_figure(
                errors,
                starts,
                title=t("positional.rotation.errors", k=k),
                x_title=t("positional.position"),
                y_title=t("chart.max_error"),
                log_y=True,
            ),
            key="pe_rotation_errors",
            summary=peaks_summary({name: (starts, y) for name, y in errors.items()}),
            data={"position": starts} | errors,
        )
    st.caption(
        t(
            "positional.rotation.explain",
            k=k,
            exact=fit["exact_max"],
            naive=fit["naive_max"],
            all_k=pe.rotation_check(cfg.d_model, cfg.n_ctx),
            k_last=cfg.n_ctx // 2 - 1,
            n_pos=cfg.n_ctx,
        )
    )
