"""Lesson: attention masks and attention step by step, on the visitor's sentence."""

import numpy as np
import streamlit as st

from components.i18n import current_language, t
from components.labels import token_labels
from components.masks import (
    cache_growth_figure,
    leakage_figure,
    log_x_curves,
)
from components.masks_steps import StepCase, StepSetup, step_charts
from components.positional import curves_figure
from components.ui.charts import show_chart
from components.ui.frame import enter_lesson
from components.ui.linked import linked_selectbox, linked_slider, linked_tabs, set_state
from components.ui.runs import masks as masks_runs
from components.ui.runs.shared import (
    about_trained,
    induction_roles,
    induction_roles_text,
    load_checkpoint,
    load_tokenizer,
    load_transformer,
    load_visitor_store,
    trained_stem,
)
from components.ui.sentence import sentence_or_stop, show_notes
from components.ui.visitor_links import visitor_id
from models.analysis import cost, kv_cache, masks, scaling
from models.analysis import trained_sources as ts
from models.nets.tokenizer import PAD, SPECIAL_TOKENS
from models.text import READ_CHARS, prepare_sentence, tokenization_notes
from models.training.checkpoints import Checkpoint, CheckpointError

enter_lesson()

# Step-by-step heatmaps stop being readable long before the model's 512 positions.
SHOWN_TOKENS = 40
SECOND_KEY = "second"
DEFAULT_SECOND = "它太累了"
# The KV cache chart shows the newest rows: where it grows.
CACHE_TAIL = 24
REPLACEMENTS = ("elephant", "never", "cold", "猫", "?")
RANDOM = "random"  # the lesson's own random Transformer; otherwise a trained checkpoint


def weights_label(weights: str) -> str:
    if weights == RANDOM or weights in ts.SHIPPED_TRANSFORMERS:
        return t(f"masks.weights.{weights}")
    return t("masks.weights.mine", name=weights)


def part_label(part: str) -> str:
    return t(f"masks.part.{part}")


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


def step_controls() -> StepSetup:
    weights_col, kind_col = st.columns(2)
    weights = linked_selectbox(
        weights_col,
        t("masks.weights"),
        (
            *ts.SHIPPED_TRANSFORMERS,
            RANDOM,
            *ts.saved_transformers(load_visitor_store().list(visitor_id())),
        ),
        ts.SHIPPED_TRANSFORMERS[0],
        key="mask_weights",
        format_func=weights_label,
    )
    kind = linked_selectbox(
        kind_col,
        t("masks.kind"),
        masks.KINDS,
        "causal",
        key="mask_kind",
        format_func=lambda k: t(f"masks.kind.{k}"),
    )
    # Cross-attention needs an encoder–decoder: trained weights show the shipped translator.
    step_stem, checkpoint = "", None
    if weights != RANDOM:
        stem = trained_stem(ts.SHIPPED_ENCODER_DECODER if kind == "cross" else weights)
        try:
            checkpoint, step_stem = load_checkpoint(stem), stem
        except CheckpointError:  # a visitor's model deleted meanwhile (age limit, size cap)
            st.warning(t("masks.weights.gone"))
    if checkpoint is None:
        step_cfg = cfg
    elif kind == "cross":
        step_cfg = checkpoint.model.core.decoder.cfg
    else:
        step_cfg = checkpoint.model.core.cfg
    layer_col, head_col = st.columns(2)
    layer = (
        linked_slider(layer_col, t("masks.layer"), 0, step_cfg.n_layers - 1, 0, key="mask_layer")
        if step_cfg.n_layers > 1
        else 0
    )
    head = linked_slider(head_col, t("masks.head"), 0, step_cfg.n_heads - 1, 0, key="mask_head")
    if checkpoint is None:
        st.caption(t("masks.weights.about.random"))
    else:
        st.info(about_trained(checkpoint, "masks.weights.about"))
    if checkpoint is not None and checkpoint.task.get("name") == "induction":
        roles = induction_roles(step_stem)
        i_layer, i_head, _ = roles["induction"]
        # The button goes under the text: beside it, a narrow screen cut its label.
        st.caption(induction_roles_text(roles, "masks.weights.roles"))
        st.button(
            t("masks.weights.jump", layer=i_layer, head=i_head),
            key="mask_jump",
            on_click=set_state,
            args=({"mask_layer": i_layer, "mask_head": i_head},),
        )
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
        max_chars=READ_CHARS,
        bind="query-params",
        help=t("masks.second_help"),
    )
    st.caption(t(f"masks.kind.explain.{kind}", prefix=prefix, window=window))
    return StepSetup(kind, checkpoint, step_stem, step_cfg, layer, head, window, prefix, second_raw)


class NothingToRead(Exception):
    """The trained model knows none of the characters it was given."""


def trained_reading(checkpoint: Checkpoint, text: str, second: bool = False) -> ts.Reading:
    """What the trained model reads for the sentence (or the second one), with a note for
    the characters it never saw; a model of a token task reads its task's sequences."""
    reading = masks_runs.trained_read(checkpoint.task, text, SHOWN_TOKENS)
    if not reading.from_sentence:
        return (
            ts.shorter(masks_runs.trained_read(checkpoint.task, text, SHOWN_TOKENS, index=1))
            if second
            else reading
        )
    if reading.unknown:
        # The characters are the visitor's: shown through st.text only.
        st.warning(t("masks.weights.unknown", count=len(reading.unknown)), icon="⚠️")
        st.text(" ".join(reading.unknown)[:200])
    if reading.n_before_cap > len(reading.ids):
        st.caption(t("masks.weights.cut", n=len(reading.ids), total=reading.n_before_cap))
    return reading


def step_input(
    checkpoint: Checkpoint | None, text: str, second: bool = False
) -> tuple[list[int], list[str]]:
    """Ids and labels the step-by-step model reads for `text`."""
    if checkpoint is None:
        step_ids, step_tokens, step_notes = encode(text)
        if second:
            show_notes(step_notes)
        return step_ids, step_tokens
    reading = trained_reading(checkpoint, text, second)
    return reading.ids, reading.tokens


def attention_case(setup: StepSetup, sentence_text: str, second_text: str) -> StepCase:
    """The traced run `setup.kind` needs; stops with NothingToRead when the trained model
    has nothing to read."""
    checkpoint, layer = setup.checkpoint, setup.layer
    if setup.kind == "cross":
        if checkpoint is None:
            source_ids, source_tokens = step_input(None, second_text, second=True)
            target_ids, target_tokens = step_input(None, sentence_text)
        else:
            source_ids, target_ids, source_tokens, target_tokens = ts.translation_example(
                checkpoint.task
            )
            st.text(" ".join(source_tokens) + "  →  " + " ".join(target_tokens))
        return StepCase.translation(
            setup.stem, source_ids, target_ids, layer, source_tokens, target_tokens
        )
    query_ids, query_tokens = step_input(checkpoint, sentence_text)
    if not query_ids:  # every character unknown to the trained model
        raise NothingToRead
    if checkpoint is not None:
        st.caption(t("masks.weights.reads", n=len(query_ids)))
        st.text(" · ".join(query_tokens))
    length = len(query_ids)
    if setup.kind == "padding":
        second_ids, second_tokens = step_input(checkpoint, second_text, second=True)
        if not second_ids:
            raise NothingToRead
        pad_id = SPECIAL_TOKENS.index(PAD) if checkpoint is None else 0
        batch, lengths = masks.pad_batch(query_ids, second_ids, pad_id)
        rows = [
            list(row_tokens) + [PAD] * (batch.shape[1] - len(row_tokens))
            for row_tokens in (query_tokens, second_tokens)
        ]
        row = masks.padded_row(lengths)
        query_ids, query_tokens, length = [int(i) for i in batch[row]], rows[row], lengths[row]
        st.caption(t("masks.padding.batch", row=row + 1, length=length, padded=len(query_ids)))
        st.text("\n".join(" · ".join(r) for r in rows))
    allowed = masks.allowed_mask(
        setup.kind, len(query_ids), length=length, prefix=setup.prefix, window=setup.window
    )
    return StepCase.masked(setup.stem, query_ids, allowed, layer, query_tokens)


def draw_steps(setup: StepSetup, case: StepCase) -> None:
    """The ten heatmaps of one head's attention, two by two, their checks and the
    explanation (built once per run, head and language: components/masks_steps.py)."""
    built = step_charts(case, setup.head, setup.cfg.d_head, setup.cfg.d_model, current_language())
    for pair in range(0, len(built.charts), 2):
        for column, chart in zip(st.columns(2), built.charts[pair : pair + 2], strict=True):
            with column:
                show_chart(chart.figure, key=chart.key, summary=chart.summary, data=chart.data)
    # The checks and the explanation are one caption: every element costs the server.
    st.caption(built.checks)
    if built.fully_masked is not None:
        st.info(built.fully_masked)


def steps_section(sentence_text: str) -> None:
    st.subheader(t("masks.steps.title"))
    setup = step_controls()
    checkpoint, kind = setup.checkpoint, setup.kind
    second = prepare_sentence(setup.second_raw)
    needs_second = kind in ("padding", "cross") and (
        checkpoint is None or (kind == "padding" and checkpoint.task.get("name") == "lm")
    )
    if needs_second:
        show_notes([note for note in second.notes if note.code != "empty_text"])
    try:
        case = (
            None
            if needs_second and second.is_empty
            else attention_case(setup, sentence_text, second.text)
        )
    except NothingToRead:
        case = None
        st.info(t("masks.weights.nothing"))
    if needs_second and second.is_empty:
        st.info(t("masks.second_needed"))
    if case is not None:
        draw_steps(setup, case)


# 2. Leakage ------------------------------------------------------------------------------


def leakage_section(ids: list[int], tokens: list[str]) -> None:
    st.subheader(t("masks.leak.title"))
    n = len(ids)
    if n < 2:
        st.info(t("masks.leak.too_short"))
    else:
        pos_col, word_col = st.columns(2)
        # Fixed bounds keep a shared link meaningful; past the sentence's end means its last token.
        chosen = linked_slider(
            pos_col, t("masks.leak.position"), 1, SHOWN_TOKENS - 1, SHOWN_TOKENS - 1, key="leak_pos"
        )
        position = min(chosen, n - 1)
        if chosen != position:
            pos_col.caption(t("masks.leak.past_end", chosen=chosen, n=n, position=position))
        word = linked_selectbox(
            word_col, t("masks.leak.word"), REPLACEMENTS, "elephant", key="leak_word"
        )
        new_id = load_tokenizer().token_id(word)
        if new_id == ids[position]:
            new_id = load_tokenizer().token_id("never" if word != "never" else "cold")
        changes = masks_runs.leakage_by_mask(tuple(ids), position, new_id)
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
            summary=t(
                "masks.leak.summary",
                causal=float(changes["causal"][:position].max()),
                bidirectional=float(changes["none"][:position].max()),
                position=position,
            ),
            data={"token": tokens, **{f"max_change_{k}": v for k, v in changes.items()}},
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


# 3. Why ÷√d_k ---------------------------------------------------------------------------


def scaling_section() -> None:
    st.subheader(t("masks.scale.title"))
    n_keys = linked_slider(st, t("masks.scale.keys"), 4, 64, 16, key="scale_keys")
    with st.spinner(t("masks.measuring")):
        variance, sharp = masks_runs.variance_lab(), masks_runs.sharpness_lab(n_keys)
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


# 4. KV cache --------------------------------------------------------------------------


def kv_section(ids: list[int]) -> None:
    st.subheader(t("masks.kv.title"))
    n = len(ids)
    context_col, new_col, step_col = st.columns(3)
    context = linked_slider(context_col, t("masks.kv.context"), 8, 384, 128, key="kv_context")
    n_new = linked_slider(new_col, t("masks.kv.new"), 4, 64, 16, key="kv_new")
    shown_step = min(linked_slider(step_col, t("masks.kv.step"), 1, 64, 1, key="kv_step"), n_new)
    prompt = (ids * (context // n + 1))[:context]
    with st.spinner(t("masks.measuring")):
        run = masks_runs.generation(tuple(prompt), n_new)
        seconds_cached, seconds_full = masks_runs.step_timings(context, n_new)
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
        show_chart(
            per_step_figure(run.macs_cached / 1e6, run.macs_full / 1e6, "macs"),
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


# 5. Cost -----------------------------------------------------------------------------


def cost_section() -> None:
    st.subheader(t("masks.cost.title"))
    with st.spinner(t("masks.measuring")):
        costs = masks_runs.cost_lab()
    lengths = costs["length"]
    cost_left, cost_right = st.columns(2)
    with cost_left:
        show_chart(
            log_x_curves(
                {
                    t("masks.cost.attention"): costs["attn_s"] * 1e3,
                    t("masks.cost.rnn"): costs["rnn_s"] * 1e3,
                },
                lengths,
                title=t("masks.cost.time_title"),
                x_title=t("masks.cost.length"),
                y_title=t("masks.kv.time_axis"),
                log_y=True,
            ),
            key="cost_time",
            summary=t(
                "masks.cost.time_summary",
                attention=float(costs["attn_s"][-1] * 1e3),
                rnn=float(costs["rnn_s"][-1] * 1e3),
                n=int(lengths[-1]),
            ),
            data={
                "length": lengths,
                "attention_ms": costs["attn_s"] * 1e3,
                "rnn_ms": costs["rnn_s"] * 1e3,
            },
        )
    with cost_right:
        show_chart(
            log_x_curves(
                {
                    t("masks.cost.attention"): costs["attn_bytes"] / 2**20,
                    t("masks.cost.rnn"): costs["rnn_bytes"] / 2**20,
                },
                lengths,
                title=t("masks.cost.memory_title"),
                x_title=t("masks.cost.length"),
                y_title="MiB",
                log_y=True,
            ),
            key="cost_memory",
            summary=t(
                "masks.cost.memory_summary",
                attention=float(costs["attn_bytes"][-1] / 2**20),
                rnn=float(costs["rnn_bytes"][-1] / 2**20),
                n=int(lengths[-1]),
            ),
            data={
                "length": lengths,
                "attention_bytes": costs["attn_bytes"],
                "rnn_bytes": costs["rnn_bytes"],
            },
        )
    st.caption(
        t(
            "masks.cost.explain",
            attn_slope=cost.growth_exponent(lengths, costs["attn_s"]),
            rnn_slope=cost.growth_exponent(lengths, costs["rnn_s"]),
            memory_slope=cost.growth_exponent(lengths, costs["attn_bytes"]),
            n=int(lengths[-1]),
            threads=int(costs["threads"]),
            per_step=float(costs["rnn_s"][-1] / lengths[-1] * 1e6),
        )
    )


# The lesson's parts, one tab each: only the open one is computed, so typing reruns one
# part. The first holds what the masks do (step by step, and the leakage proof on the
# visitor's sentence); the others are labs.
PARTS = ("masks", "scale", "kv", "cost")
st.caption(t("masks.parts_hint"))
part, tab = linked_tabs(
    st,
    PARTS,
    "masks",
    key="mask_part",
    format_func=part_label,
    # A link that sets a lab's control (as links made before the tabs did) opens its tab.
    opened_by={"scale": ("scale_keys",), "kv": ("kv_context", "kv_new", "kv_step")},
)
with tab:
    if part == "masks":
        steps_section(sentence.text)
        leakage_section(ids, tokens)
    elif part == "scale":
        scaling_section()
    elif part == "kv":
        kv_section(ids)
    else:
        cost_section()
