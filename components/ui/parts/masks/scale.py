"""The lab "scale": why attention divides by √d_k. Dot products of random vectors have a
variance that grows with d_k, and unscaled they make the softmax ever sharper."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.masks import log_x_curves
from components.ui.charts import show_chart
from components.ui.linked import linked_slider
from components.ui.runs import masks as runs
from models.analysis import scaling
from models.nets.transformer import TransformerConfig


def draw(cfg: TransformerConfig) -> None:
    """`cfg` is the lesson's random Transformer's."""
    st.subheader(t("masks.scale.title"))
    n_keys = linked_slider(st, t("masks.scale.keys"), 4, 64, 16, key="scale_keys")
    with st.spinner(t("masks.measuring")):
        variance, sharp = runs.variance_lab(), runs.sharpness_lab(n_keys)
    d_ks = variance["d_k"]
    errors = np.abs(variance["variance"] / d_ks - 1)
    worst = int(np.argmax(errors))
    var_col, entropy_col = st.columns(2)
    max_col, scale_text_col = st.columns(2)
    with var_col:
        show_chart(
            log_x_curves(
                {
                    t("masks.scale.measured"): variance["variance"],
                    t("masks.scale.scaled"): variance["variance_scaled"],
                    "d_k": d_ks,
                },
                d_ks,
                title=t("masks.scale.variance_title"),
                x_title="d_k",
                y_title=t("masks.scale.variance_axis"),
                log_y=True,
                dashed=("d_k",),
            ),
            key="scale_variance",
            summary=t(
                "masks.scale.variance_summary",
                worst=float(errors[worst]),
                at=int(d_ks[worst]),
                big=float(variance["variance"][-1]),
                d_k=int(d_ks[-1]),
            ),
            data={
                "d_k": d_ks,
                "variance": variance["variance"],
                "scaled": variance["variance_scaled"],
            },
        )
    for column, measure, key in (
        (entropy_col, "entropy", "scale_entropy"),
        (max_col, "max", "scale_max"),
    ):
        curves = {
            t("masks.scale.unscaled_curve"): sharp[measure],
            t("masks.scale.scaled_curve"): sharp[f"{measure}_scaled"],
        }
        if measure == "entropy":
            curves[t("masks.scale.uniform")] = sharp["uniform_entropy"]
        with column:
            show_chart(
                log_x_curves(
                    curves,
                    d_ks,
                    title=t(f"masks.scale.{measure}_title", n_keys=n_keys),
                    x_title="d_k",
                    y_title=t(f"masks.scale.{measure}_axis"),
                    dashed=(t("masks.scale.uniform"),),
                ),
                key=key,
                summary=t(
                    f"masks.scale.{measure}_summary",
                    unscaled=float(sharp[measure][-1]),
                    scaled=float(sharp[f"{measure}_scaled"][-1]),
                    d_k=int(d_ks[-1]),
                ),
                data={
                    "d_k": d_ks,
                    "unscaled": sharp[measure],
                    "scaled": sharp[f"{measure}_scaled"],
                },
            )
    scale_text_col.caption(
        t(
            "masks.scale.explain",
            samples=scaling.N_SAMPLES,
            worst=float(errors[worst]),
            n_keys=n_keys,
            uniform=float(sharp["uniform_entropy"][0]),
            max_unscaled=float(sharp["max"][-1]),
            max_scaled=float(sharp["max_scaled"][-1]),
            d_head=cfg.d_head,
        )
    )
