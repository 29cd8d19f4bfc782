"""Part: a few numbers for every head (entropy, distance, weight on the sinks), and how
many heads are sinks. Offered to the tour as drawn; held back while its question is open."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.grid import statistics_grid
from components.i18n import t
from components.labels import markdown_literal
from components.summaries import head_statistics_summary
from components.ui.charts import show_chart
from components.ui.parts.heads.reading import Reading
from components.ui.tour import held_back, offer, show_held_back


def draw(reading: Reading) -> None:
    cfg, tokens, stats, sinks = reading.cfg, reading.tokens, reading.stats, reading.sinks
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    # A decoder's last token is seen by the last query alone: only the first token can be a sink.
    stat_names = (
        ("entropy", "distance", "cls") if cfg.causal else ("entropy", "distance", "cls", "sep")
    )
    stat_titles = {name: t(f"heads.stat.{name}") for name in stat_names}
    if cfg.causal:
        stat_titles["cls"] = t("heads.stat.first")
    drawn = {name: stats[name] for name in stat_names}
    # The shares on the sink keys (the first, and an encoder's last): a head whose shares
    # sum to over a half is a sink (reading.py, n_sink).
    sink_shares = ("cls", "sep")[: len(sinks)]
    offer("heads.statistics", stats=drawn, sink_shares=sink_shares, n_tokens=len(tokens))
    if held_back("heads.sinks"):
        show_held_back()
        return
    show_chart(
        statistics_grid(
            drawn,
            titles=stat_titles,
            formats={"entropy": ".2f", "distance": ".1f", "cls": ".0%", "sep": ".0%"},
        ),
        key="summary",
        summary=head_statistics_summary(drawn, stat_titles),
        data={"layer": range(n_layers), "head": range(n_heads)} | drawn,
    )
    st.caption(t("heads.summary_caption", max_entropy=float(np.log2(len(tokens)))))
    st.info(
        t(
            "heads.sinks_decoder" if cfg.causal else "heads.sinks",
            n_sink=reading.n_sink,
            n_total=n_layers * n_heads,
            first=markdown_literal(tokens[sinks[0]]),
            last=markdown_literal(tokens[sinks[-1]]),
        )
    )
