"""Part 3, "clipping": what clipping the gradient's norm does to the total and to the early
steps' share, for the network chosen here (the unit part's control is the same one)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.palette import BLUE, ORANGE
from components.recurrent import clipping_figure, lines_figure
from components.summaries import clipping_summary, lines_summary
from components.ui.charts import show_chart
from components.ui.parts.recurrent.flow import Flow, chosen_network
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import gradient_flow as gf


def draw(flow: Flow) -> None:
    clip, tau, distance = flow.controls.settings.clip, flow.reading.tau, flow.distance
    st.subheader(t("recurrent.clip.title"))
    focus = chosen_network()
    summary = gf.clip_summary(flow.result[focus]["grad_X_rows"], tau, clip)
    without, with_clip = t("recurrent.clip.without"), t("recurrent.clip.with", c=clip)
    clip_left, clip_right = st.columns(2)
    totals = {without: summary["total"], with_clip: summary["norm_clipped"]}
    shares = {without: summary["early_share"], with_clip: summary["early_share_clipped"]}
    clip_curves = {
        without: (distance, summary["per_step"][::-1]),
        with_clip: (distance, summary["per_step_clipped"][::-1]),
    }
    offer("recurrent.clipping", model=focus, clip=clip, totals=totals, shares=shares)
    # Both charts and the caption show how clipping changes the early share.
    if held_back("rc_clip_bars"):
        show_held_back()
        return
    with clip_left:
        show_chart(
            clipping_figure(
                totals,
                shares,
                clip,
                title=t("recurrent.clip.figure", model=focus),
                total_title=t("recurrent.clip.total"),
                share_title=t("recurrent.clip.share", n_early=summary["n_early"]),
            ),
            key="rc_clip_bars",
            summary=clipping_summary(totals, shares, summary["n_early"]),
            data={
                "case": list(totals),
                "total_norm": list(totals.values()),
                "early_share": list(shares.values()),
            },
        )
    with clip_right:
        show_chart(
            lines_figure(
                clip_curves,
                title=t("recurrent.clip.lines", model=focus),
                x_title=t("recurrent.distance.axis"),
                y_title="‖∂L/∂X_t‖",
                colors={without: BLUE, with_clip: ORANGE},
                hline=clip,
            ),
            key="rc_clip_lines",
            summary=lines_summary(clip_curves),
            data={"distance": distance} | {name: y for name, (_, y) in clip_curves.items()},
        )
    if np.isfinite(summary["total"]):
        st.caption(
            t(
                "recurrent.clip.explain",
                total=summary["total"],
                clipped=summary["norm_clipped"],
                c=clip,
                share=100 * summary["early_share"],
                share_clipped=100 * summary["early_share_clipped"],
                n_early=summary["n_early"],
            )
        )
    else:
        st.caption(t("recurrent.clip.nonfinite", c=clip))
