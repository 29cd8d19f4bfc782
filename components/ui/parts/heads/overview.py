"""The attention lesson's overview, drawn on every run above the tabbed parts: every head
at once, the chosen head alone, and where one token looks in every head.

Each chart offers the numbers it draws to the lesson's tour (components/tours/probes/heads.py),
and, while a tour question it answers is open, waits for the learner's answer: the charts
of the heads' weights answer "heads.head_weights" (where a token looks in a head), and the
all-heads chart, whose summary counts the sinks, answers "heads.sinks" too."""

from __future__ import annotations

from functools import partial

import streamlit as st

from components.grid import all_heads_grid, focus_grid, head_grid, position_labels
from components.i18n import t
from components.summaries import all_heads_summary, strongest_link_summary, token_focus_summary
from components.ui.charts import show_chart
from components.ui.linked import linked_selectbox, set_state
from components.ui.parts.heads.reading import Reading
from components.ui.tour import held_back, offer, show_held_back
from models.analysis.attention_stats import strongest_head_for_query, strongest_link


def pick_head(cfg) -> tuple[int, int]:
    """The layer and head choices: they need no trace, so they are drawn while the pass
    runs."""
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    pick_layer, pick_head = st.columns(2)
    # Opens on layer 3, head 1: on the default sentence MiniLM links "it" to "animal" there.
    layer = linked_selectbox(
        pick_layer, t("heads.layer"), range(n_layers), min(3, n_layers - 1), key="layer"
    )
    head = linked_selectbox(
        pick_head, t("heads.head"), range(n_heads), min(1, n_heads - 1), key="head"
    )
    return layer, head


def _kv_of(cfg, head: int) -> str:
    return t("heads.kv_of", kv=cfg.kv_head(head))


def _token_option(tokens: list[str], i: int) -> str:
    return f"{i}: {tokens[i]}"


def _kv_suffix(cfg):
    return partial(_kv_of, cfg) if cfg.n_kv_heads < cfg.n_heads else str


def draw_all(reading: Reading, layer: int, head: int) -> None:
    """The first chart: every head at once."""
    cfg = reading.cfg
    offer(
        "heads.reading",
        tokens=reading.tokens,
        labels=position_labels(reading.tokens),
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        patterns=reading.patterns,
        specials=reading.specials,
        sinks=reading.sinks,
        causal=bool(cfg.causal),
    )
    if held_back("heads.head_weights") or held_back("heads.sinks"):
        show_held_back()
        return
    _all_heads(reading, layer, head, _kv_suffix(cfg))


def draw_chosen(reading: Reading, layer: int, head: int) -> None:
    """Below the layer and head choices: the chosen head alone, and one token's focus."""
    kv_suffix = _kv_suffix(reading.cfg)
    one, focus = st.columns(2)
    with one:
        _one_head(reading, layer, head, kv_suffix)
    with focus:
        _focus(reading)


def _all_heads(reading: Reading, layer: int, head: int, kv_suffix) -> None:
    cfg, tokens, patterns, stats = reading.cfg, reading.tokens, reading.patterns, reading.stats
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    # One template, filled with Python floats (numpy's scalars format several times slower).
    hover_template = t("heads.all_hover_decoder" if cfg.causal else "heads.all_hover")
    stat_lists = {name: stats[name].tolist() for name in ("entropy", "distance", "cls", "sep")}
    hover = [
        [
            hover_template.format(
                layer=la, head=h, **{name: values[la][h] for name, values in stat_lists.items()}
            )
            + ("" if cfg.n_kv_heads == cfg.n_heads else f"\n{kv_suffix(h)}")
            for h in range(n_heads)
        ]
        for la in range(n_layers)
    ]
    show_chart(
        all_heads_grid(
            patterns,
            selected=(layer, head),
            hover_text=hover,
            head_title=t("heads.axis.head"),
            layer_title=t("heads.axis.layer"),
        ),
        key="all_heads",
        summary=all_heads_summary(
            patterns, tokens, reading.specials, reading.sinks, n_sink=reading.n_sink
        ),
        picks=(("layer", n_layers), ("head", n_heads)),
        data={
            "layer": range(n_layers),
            "head": range(n_heads),
            "query": tokens,
            "key": tokens,
            "weight": patterns,
        },
    )
    st.caption(t("heads.all_caption"))


def _one_head(reading: Reading, layer: int, head: int, kv_suffix) -> None:
    cfg, tokens = reading.cfg, reading.tokens
    st.subheader(t("heads.one_title", layer=layer, head=head))
    if cfg.n_kv_heads < cfg.n_heads:
        st.caption(kv_suffix(head))
    pattern = reading.patterns[layer, head]
    offer("heads.one_head", layer=layer, head=head, labels=position_labels(tokens), pattern=pattern)
    if held_back("heads.head_weights"):
        show_held_back()
        return
    link = strongest_link(pattern, ignore=reading.specials)
    show_chart(
        head_grid(
            pattern,
            tokens,
            query_title=t("heads.query"),
            key_title=t("heads.key"),
            weight_title=t("heads.axis.weight"),
        ),
        key="one_head",
        summary=strongest_link_summary(tokens, link, layer, head),
        data={"query": tokens, "key": tokens, "weight": pattern},
    )
    st.caption(t("heads.one_caption", others=cfg.n_heads - 1))


def _focus(reading: Reading) -> None:
    cfg, tokens, patterns = reading.cfg, reading.tokens, reading.patterns
    specials = reading.specials
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    st.subheader(t("heads.focus_title"))
    words = [token.lstrip("Ġ▁").lower() for token in tokens]
    # A decoder's last token sees every other one, and its output is the next token.
    fallback = len(tokens) - 1 if cfg.causal else min(1, len(tokens) - 1)
    default_query = words.index("it") if "it" in words else fallback
    # A new sentence starts again from its default token; a link restores its own.
    if st.session_state.get("_focus_tokens", tokens) != tokens:
        st.session_state["token"] = default_query
    st.session_state["_focus_tokens"] = tokens
    query = linked_selectbox(
        st,
        t("heads.focus_token"),
        range(len(tokens)),
        default_query,
        key="token",
        format_func=partial(_token_option, tokens),
    )
    weights = patterns[:, :, query, :]
    labels = position_labels(tokens)
    offer("heads.focus", query=query, tokens=tokens, labels=labels, weights=weights)
    if held_back("heads.head_weights"):
        show_held_back()
        return
    # Neighbours are skipped too: many heads just look one token back or ahead.
    neighbours = tuple(k for k in (query - 1, query + 1) if 0 <= k < len(tokens))
    best = strongest_head_for_query(patterns, query, (*specials, *neighbours))
    show_chart(
        focus_grid(
            patterns, query, tokens, key_title=t("heads.key"), weight_title=t("heads.axis.weight")
        ),
        key="focus",
        summary=token_focus_summary(tokens, query, best, patterns),
        data={
            "layer": range(n_layers),
            "head": range(n_heads),
            "key": tokens,
            "weight": weights,
        },
    )
    st.caption(t("heads.focus_caption", count=n_layers * n_heads))
    if best is None:
        return
    special_names = ", ".join(dict.fromkeys(tokens[i] for i in specials)) or t("heads.no_specials")
    best_layer, best_head, best_key, best_w = best
    st.text(
        t(
            "heads.focus_best",
            specials=special_names,
            token=tokens[query],
            key=tokens[best_key],
            weight=best_w,
            layer=best_layer,
            head=best_head,
        )
    )
    st.button(
        t("heads.focus_show", layer=best_layer, head=best_head),
        on_click=set_state,
        args=({"layer": best_layer, "head": best_head},),
    )
