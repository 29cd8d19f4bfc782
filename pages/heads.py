"""Lesson: every attention head of a pretrained encoder, on the visitor's sentence."""

import numpy as np
import streamlit as st

from components.attention import (
    all_heads_figure,
    head_heatmap,
    head_summary_figure,
    token_focus_figure,
)
from components.frame import enter_lesson
from components.i18n import t
from components.labels import token_labels
from components.summaries import (
    all_heads_summary,
    head_statistics_summary,
    strongest_link_summary,
    token_focus_summary,
)
from components.widgets import (
    encoder_run,
    linked_selectbox,
    load_encoder,
    sentence_or_stop,
    show_chart,
    show_notes,
)
from models.attention_stats import head_statistics, strongest_head_for_query, strongest_link
from models.inputs import Note, tokenization_notes
from models.pretrained import MAX_TOKENS, MODEL_NAME, accent_changes, stack_patterns, unknown_spans


def select_head(layer: int, head: int) -> None:
    st.session_state["layer"] = layer
    st.session_state["head"] = head


enter_lesson()
encoder = load_encoder()
cfg = encoder.cfg
st.header(t("heads.title"))
st.caption(
    t(
        "heads.intro",
        model=MODEL_NAME,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_model=cfg.d_model,
        d_head=cfg.d_head,
    )
)

sentence = sentence_or_stop()

run = encoder_run(sentence.text)
tokens = list(run.trace["tokens"])
tokenized_notes = tokenization_notes(
    len(tokens),
    run.tokenized.n_tokens_before_cap,
    MAX_TOKENS,
    unknown_spans(run.tokenized, sentence.text, encoder.unknown_token),
)
accents = accent_changes(sentence.text, encoder.tokenizer)
if accents:
    shown = ", ".join(f"{word} → {normalised}" for word, normalised in accents[:8])
    tokenized_notes.append(Note("normalised", quote=shown))
show_notes(tokenized_notes)

st.caption(t("heads.tokens", n=len(tokens)))
st.text(" · ".join(tokens))

patterns = stack_patterns(run.trace)
labels = token_labels(tokens)
stats = head_statistics(patterns)
n_layers, n_heads = patterns.shape[:2]

pick_layer, pick_head = st.columns(2)
# Opens on layer 3, head 1: on the default sentence it links "it" to "animal".
layer = linked_selectbox(pick_layer, t("heads.layer"), range(n_layers), 3, key="layer")
head = linked_selectbox(pick_head, t("heads.head"), range(n_heads), 1, key="head")

hover = [
    [
        t(
            "heads.all_hover",
            layer=la,
            head=h,
            entropy=stats["entropy"][la, h],
            distance=stats["distance"][la, h],
            cls=stats["cls"][la, h],
            sep=stats["sep"][la, h],
        )
        for h in range(n_heads)
    ]
    for la in range(n_layers)
]
st.subheader(t("heads.all_title", n_layers=n_layers, n_heads=n_heads))
show_chart(
    all_heads_figure(
        patterns,
        selected=(layer, head),
        hover_text=hover,
        head_title=t("heads.axis.head"),
        layer_title=t("heads.axis.layer"),
    ),
    key="all_heads",
    summary=all_heads_summary(patterns, tokens),
    data={
        "layer": range(n_layers),
        "head": range(n_heads),
        "query": tokens,
        "key": tokens,
        "weight": patterns,
    },
)
st.caption(t("heads.all_caption"))

specials = (0, len(tokens) - 1)
one, focus = st.columns(2)
with one:
    st.subheader(t("heads.one_title", layer=layer, head=head))
    pattern = patterns[layer, head]
    link = strongest_link(pattern, ignore=specials)
    show_chart(
        head_heatmap(
            pattern,
            labels,
            query_title=t("heads.query"),
            key_title=t("heads.key"),
            weight_title=t("heads.axis.weight"),
        ),
        key="one_head",
        summary=strongest_link_summary(tokens, link, layer, head),
        data={"query": tokens, "key": tokens, "weight": pattern},
    )
    st.caption(t("heads.one_caption", others=n_heads - 1))

with focus:
    st.subheader(t("heads.focus_title"))
    default_query = tokens.index("it") if "it" in tokens else min(1, len(tokens) - 1)
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
        format_func=lambda i: f"{i}: {tokens[i]}",
    )
    # Neighbours are skipped too: many heads just look one token back or ahead.
    neighbours = tuple(k for k in (query - 1, query + 1) if 0 < k < len(tokens) - 1)
    best = strongest_head_for_query(patterns, query, (*specials, *neighbours))
    show_chart(
        token_focus_figure(
            patterns, query, labels, key_title=t("heads.key"), weight_title=t("heads.axis.weight")
        ),
        key="focus",
        summary=token_focus_summary(tokens, query, best, patterns),
        data={
            "layer": range(n_layers),
            "head": range(n_heads),
            "key": tokens,
            "weight": patterns[:, :, query, :],
        },
    )
    st.caption(t("heads.focus_caption", count=n_layers * n_heads))
    if best is not None:
        best_layer, best_head, best_key, best_w = best
        st.text(
            t(
                "heads.focus_best",
                token=tokens[query],
                key=tokens[best_key],
                weight=best_w,
                layer=best_layer,
                head=best_head,
            )
        )
        st.button(
            t("heads.focus_show", layer=best_layer, head=best_head),
            on_click=select_head,
            args=(best_layer, best_head),
        )

st.subheader(t("heads.summary_title"))
stat_names = ("entropy", "distance", "cls", "sep")
show_chart(
    head_summary_figure(
        {name: stats[name] for name in stat_names},
        titles={name: t(f"heads.stat.{name}") for name in stat_names},
        formats={"entropy": ".2f", "distance": ".1f", "cls": ".0%", "sep": ".0%"},
    ),
    key="summary",
    summary=head_statistics_summary(
        {name: stats[name] for name in stat_names},
        {name: t(f"heads.stat.{name}") for name in stat_names},
    ),
    data={"layer": range(n_layers), "head": range(n_heads)}
    | {name: stats[name] for name in stat_names},
)
st.caption(t("heads.summary_caption", max_entropy=float(np.log2(len(tokens)))))
n_sink = int(((stats["cls"] + stats["sep"]) > 0.5).sum())
st.info(t("heads.sinks", n_sink=n_sink, n_total=n_layers * n_heads))
