"""Lesson: attention masks and attention step by step, on the visitor's sentence."""

import numpy as np
import streamlit as st

from components.frame import enter_lesson
from components.i18n import t
from components.labels import token_labels
from components.masks import leakage_figure, shape_text, step_heatmap
from components.widgets import (
    linked_selectbox,
    linked_slider,
    load_tokenizer,
    load_transformer,
    sentence_or_stop,
    show_chart,
    show_notes,
)
from models import masks
from models.inputs import prepare_sentence, tokenization_notes
from models.tokenizer import PAD, SPECIAL_TOKENS

enter_lesson()

# Step-by-step heatmaps stop being readable long before the model's 512 positions.
SHOWN_TOKENS = 40
SECOND_KEY = "second"
DEFAULT_SECOND = "它太累了"
REPLACEMENTS = ("elephant", "never", "cold", "猫", "?")


@st.cache_resource(show_spinner=False)
def load_encoder_decoder():
    """A random encoder–decoder (same sizes as the encoder), shared by every session and
    only ever read."""
    from models.transformer import EncoderDecoder

    return EncoderDecoder(load_transformer("sinusoidal").cfg, seed=0)


@st.cache_data(max_entries=64, show_spinner=False)
def masked_run(ids: tuple[int, ...], allowed: np.ndarray) -> dict:
    return masks.run_masked(load_transformer("sinusoidal"), list(ids), allowed)[1]


@st.cache_data(max_entries=64, show_spinner=False)
def cross_run(source: tuple[int, ...], target: tuple[int, ...]) -> dict:
    return masks.run_cross(load_encoder_decoder(), list(source), list(target))[1]


@st.cache_data(max_entries=64, show_spinner=False)
def leakage_by_mask(ids: tuple[int, ...], position: int, new_id: int) -> dict[str, np.ndarray]:
    model = load_transformer("sinusoidal")
    n = len(ids)
    return {
        kind: masks.leakage(model, list(ids), position, new_id, masks.allowed_mask(kind, n))
        for kind in ("causal", "none")
    }


def encode(text: str) -> tuple[list[int], list[str], list]:
    """Ids and tokens of `text` (the first SHOWN_TOKENS), with notes on what was lost."""
    encoded = load_tokenizer().encode(text, SHOWN_TOKENS)
    notes = tokenization_notes(
        len(encoded.ids),
        encoded.n_tokens_before_cap,
        SHOWN_TOKENS,
        encoded.unknown_spans(text),
        vocabulary="own_",
    )
    return list(encoded.ids), list(encoded.tokens), notes


cfg = load_transformer("sinusoidal").cfg
st.header(t("masks.title"))
st.caption(
    t(
        "masks.intro",
        d_model=cfg.d_model,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_head=cfg.d_head,
    )
)

sentence = sentence_or_stop()
ids, tokens, notes = encode(sentence.text)
show_notes(notes)
n = len(ids)
st.caption(t("masks.tokens", n=n))
st.text(" · ".join(tokens))

# 1. Attention step by step under a mask ------------------------------------------------
st.subheader(t("masks.steps.title"))
kind_col, layer_col, head_col = st.columns([2, 1, 1])
kind = linked_selectbox(
    kind_col,
    t("masks.kind"),
    masks.KINDS,
    "causal",
    key="mask_kind",
    format_func=lambda k: t(f"masks.kind.{k}"),
)
layer = linked_slider(layer_col, t("masks.layer"), 0, cfg.n_layers - 1, 0, key="mask_layer")
head = linked_slider(head_col, t("masks.head"), 0, cfg.n_heads - 1, 0, key="mask_head")
window_col, prefix_col = st.columns(2)
window = linked_slider(
    window_col,
    t("masks.window"),
    1,
    16,
    2,
    key="mask_window",
    disabled=kind != "window",
)
prefix = linked_slider(
    prefix_col,
    t("masks.prefix"),
    1,
    SHOWN_TOKENS,
    3,
    key="mask_prefix",
    disabled=kind != "prefix",
)
second_raw = st.text_input(
    t("masks.second_label"),
    value=DEFAULT_SECOND,
    key=SECOND_KEY,
    bind="query-params",
    help=t("masks.second_help"),
)
st.caption(t(f"masks.kind.explain.{kind}", prefix=prefix, window=window))


def attention_case(kind: str, second_text: str) -> tuple[dict, str, np.ndarray, list, list]:
    """The traced run `kind` needs: (trace, attention name, X of the queries, query tokens,
    key tokens)."""
    tokenizer = load_tokenizer()
    if kind == "cross":
        source_ids, source_tokens, source_notes = encode(second_text)
        show_notes(source_notes)
        cache = cross_run(tuple(source_ids), tuple(ids))
        x_query = cache[f"decoder.blocks.{layer}.ln_cross.hook_normalized"]
        return cache, f"decoder.blocks.{layer}.cross_attn", x_query, tokens, source_tokens
    query_ids, length = ids, n
    if kind == "padding":
        second_ids, _, second_notes = encode(second_text)
        show_notes(second_notes)
        batch, lengths = masks.pad_batch(ids, second_ids, SPECIAL_TOKENS.index(PAD))
        row = masks.padded_row(lengths)
        query_ids, length = [int(i) for i in batch[row]], lengths[row]
        st.caption(t("masks.padding.batch", row=row + 1, length=length, padded=len(query_ids)))
        st.text("\n".join(" · ".join(map(tokenizer.id_to_token, b)) for b in batch.tolist()))
    allowed = masks.allowed_mask(kind, len(query_ids), length=length, prefix=prefix, window=window)
    cache = masked_run(tuple(query_ids), allowed)
    query_tokens = [tokenizer.id_to_token(i) for i in query_ids]
    x_query = cache[f"blocks.{layer}.ln1.hook_normalized"]
    return cache, f"blocks.{layer}.attn", x_query, query_tokens, query_tokens


second = prepare_sentence(second_raw)
needs_second = kind in ("padding", "cross")
if needs_second:
    show_notes([note for note in second.notes if note.code != "empty_text"])
if needs_second and second.is_empty:
    st.info(t("masks.second_needed"))
else:
    cache, name, x_query, query_tokens, key_tokens = attention_case(kind, second.text)
    steps = masks.head_steps(cache, name, head, x_query)
    allowed = np.isfinite(steps["hook_attn_scores"])
    q_labels, k_labels = token_labels(query_tokens), token_labels(key_tokens)
    dims = [str(i) for i in range(cfg.d_head)]
    model_dims = [str(i) for i in range(cfg.d_model)]
    query_axis, key_axis = t("masks.axis.query"), t("masks.axis.key")
    dim_axis = t("masks.axis.dim")

    value = t("masks.value")
    # (step, x labels, x title, y labels, y title, extra options): rows are queries, or the
    # keys' own positions for K and V.
    layout = (
        ("x_query", model_dims, dim_axis, q_labels, query_axis, {}),
        ("hook_q", dims, dim_axis, q_labels, query_axis, {}),
        ("hook_k", dims, dim_axis, k_labels, key_axis, {}),
        ("hook_v", dims, dim_axis, k_labels, key_axis, {}),
        ("qk", k_labels, key_axis, q_labels, query_axis, {}),
        ("scaled", k_labels, key_axis, q_labels, query_axis, {}),
        ("mask", k_labels, key_axis, q_labels, query_axis, {"masked": ~allowed}),
        ("hook_attn_scores", k_labels, key_axis, q_labels, query_axis, {"masked": ~allowed}),
        (
            "hook_pattern",
            k_labels,
            key_axis,
            q_labels,
            query_axis,
            {"masked": ~allowed, "masked_text": "0", "weights": True},
        ),
        ("hook_z", dims, dim_axis, q_labels, query_axis, {}),
    )
    for pair in range(0, len(layout), 2):
        for column, spec in zip(st.columns(2), layout[pair : pair + 2], strict=True):
            step, x_labels, x_title, y_labels, y_title, options = spec
            matrix = np.zeros(allowed.shape) if step == "mask" else steps[step]
            names = {"mask": t("masks.mask_value"), "hook_pattern": t("masks.weight")}
            with column:
                show_chart(
                    step_heatmap(
                        matrix,
                        t(f"masks.step.{step}", shape=shape_text(steps[step]), d_head=cfg.d_head),
                        x_labels,
                        y_labels,
                        x_title,
                        y_title,
                        value_name=names.get(step, value),
                        **options,
                    ),
                    key=f"mask_step_{step}",
                )

    pattern = steps["hook_pattern"]
    empty_rows = masks.fully_masked_rows(allowed)
    seeing = np.setdiff1d(np.arange(pattern.shape[0]), empty_rows)
    row_error = float(np.abs(pattern[seeing].sum(axis=1) - 1).max()) if seeing.size else 0.0
    st.caption(
        t(
            "masks.steps.checks",
            n_masked=int((~allowed).sum()),
            n_cells=allowed.size,
            largest_masked=float(pattern[~allowed].max()) if (~allowed).any() else 0.0,
            row_error=row_error,
            fused=masks.fused_difference(steps, allowed),
        )
    )
    if empty_rows.size:
        st.info(
            t(
                "masks.fully_masked",
                count=empty_rows.size,
                first=int(empty_rows[0]),
                last=int(empty_rows[-1]),
            )
        )
    st.caption(t("masks.steps.explain", d_head=cfg.d_head))

# 2. Leakage ------------------------------------------------------------------------------
st.subheader(t("masks.leak.title"))
if n < 2:
    st.info(t("masks.leak.too_short"))
else:
    pos_col, word_col = st.columns(2)
    # Fixed bounds keep a shared link meaningful; past the sentence's end means its last token.
    chosen = linked_slider(
        pos_col, t("masks.leak.position"), 1, SHOWN_TOKENS - 1, SHOWN_TOKENS - 1, key="leak_pos"
    )
    position = min(chosen, n - 1)
    word = linked_selectbox(
        word_col, t("masks.leak.word"), REPLACEMENTS, "elephant", key="leak_word"
    )
    new_id = load_tokenizer().token_id(word)
    if new_id == ids[position]:
        new_id = load_tokenizer().token_id("never" if word != "never" else "cold")
    changes = leakage_by_mask(tuple(ids), position, new_id)
    edited_tokens = list(tokens)
    edited_tokens[position] = load_tokenizer().id_to_token(new_id)
    st.text(" · ".join(edited_tokens))
    show_chart(
        leakage_figure(
            {t(f"masks.kind.{k}"): v for k, v in changes.items()},
            token_labels(tokens),
            position,
            title=t("masks.leak.figure", position=position),
            y_title=t("masks.leak.axis"),
            edited_text=t("masks.leak.edited"),
        ),
        key="mask_leakage",
    )
    before = slice(0, position)
    st.caption(
        t(
            "masks.leak.explain",
            position=position,
            causal=float(changes["causal"][before].max()),
            identical=int((changes["causal"][before] == 0).sum()),
            earlier=position,
            bidirectional=float(changes["none"][before].max()),
        )
    )
