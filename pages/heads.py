"""Lesson: every attention head of a pretrained model, on the visitor's sentence.

The model is all-MiniLM-L6-v2 unless the visitor picks another one the server's operator
offers (models/serving/catalog.py), a Transformer SeqLens ships trained, or one the visitor trained
(models/analysis/trained_attention.py). Below the heads: switching heads off, and attention rollout.
"""

import logging

import numpy as np
import streamlit as st

from components.ablation import next_token_figure, token_similarity_figure
from components.grid import (
    all_heads_grid,
    focus_grid,
    head_grid,
    position_labels,
    statistics_grid,
)
from components.i18n import LANGUAGES, t, using_language
from components.labels import escape_label, head_label, markdown_literal, token_labels
from components.summaries import (
    all_heads_summary,
    head_statistics_summary,
    strongest_link_summary,
    token_focus_summary,
)
from components.ui.charts import load_grid_charts, show_chart
from components.ui.frame import enter_lesson
from components.ui.linked import (
    linked_multiselect,
    linked_selectbox,
    linked_slider,
    linked_tabs,
    set_state,
)
from components.ui.pass_ahead import leave_pass_ahead
from components.ui.runs.heads import (
    CHECKPOINT_KEY,
    ablation_run,
    attention_model_shown,
    attention_run,
    every_head_run,
    model_choices,
)
from components.ui.runs.shared import (
    about_trained,
    induction_roles,
    induction_roles_text,
    load_checkpoint,
    load_visitor_store,
    trained_stem,
)
from components.ui.sentence import sentence_or_stop, show_notes
from components.ui.visitor_links import visitor_id
from models.analysis import trained_sources as ts
from models.analysis.attention_stats import (
    attention_rollout,
    head_statistics,
    sink_heads,
    sink_positions,
    strongest_head_for_query,
    strongest_link,
)
from models.nets.pretrained import stack_patterns
from models.serving.catalog import SHIPPED_KEY
from models.serving.fair_slots import Superseded, Unfinished
from models.serving.model_files import ModelRefused
from models.serving.runtime import HEAVY_DEADLINE_S
from models.training.checkpoints import CheckpointError

FAMILIES = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-RoBERTa",
    "gpt2": "GPT-2",
    "llama": "Llama",
    "mistral": "Mistral",
}
# Controls whose options depend on the model: a new model starts them from their defaults.
MODEL_BOUND_KEYS = ("layer", "head", "token", "ablate", "rollout_layer")
# Picker keys of trained Transformers: shipped ones by checkpoint name, the visitor's own
# by the name they were saved under (kept in their own folder, never named by a path).
TRAINED, MINE = "trained:", "mine:"


def count_text(n: int) -> str:
    for size, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "k")):
        if n >= size:
            return f"{n / size:.1f} {suffix}"
    return str(n)


def model_label(choice) -> str:
    return t(
        "heads.model_option",
        name=choice.name,
        family=FAMILIES.get(choice.model_type, choice.model_type),
        params=count_text(choice.n_params) if choice.n_params else "?",
        source=t(f"heads.source.{choice.source}"),
    )


COUNT_PARAMS = ("n_params", "limit", "config_params")


def refusal_text(code: str, params: dict) -> str:
    counts = {name: count_text(params[name]) for name in COUNT_PARAMS if name in params}
    return t(f"heads.refused.{code}", **{**params, **counts})


def trained_choices() -> list[str]:
    """The shipped trained Transformers, then this visitor's own (newest first)."""
    saved = ts.saved_transformers(load_visitor_store().list(visitor_id()))
    return [TRAINED + name for name in ts.SHIPPED_TRANSFORMERS] + [MINE + name for name in saved]


def trained_label(key: str) -> str:
    if key.startswith(TRAINED):
        return t(f"heads.trained.option.{key.removeprefix(TRAINED)}")
    return t("heads.trained.option.mine", name=key.removeprefix(MINE))


def cached_key(choice: str) -> str:
    """What the model and its runs are cached under: a trained choice becomes its
    checkpoint's stem (a visitor's in their own folder), a catalogue key stays as it is."""
    if choice.startswith((TRAINED, MINE)):
        return CHECKPOINT_KEY + trained_stem(choice.split(":", 1)[1])
    return choice


def own_model_missing(asked: object, trained: list[str]) -> bool:
    """Whether `asked` names one of the visitor's models, by its key (`mine:<name>`) or by
    its label in any language (a link copied from the address bar carries the label),
    that is not among `trained`, the ones in their folder now."""
    if not isinstance(asked, str):
        return False
    mine = [key for key in trained if key.startswith(MINE)]
    known, names_mine = set(mine), asked.startswith(MINE)
    for language in LANGUAGES:
        with using_language(language):
            known |= {trained_label(key) for key in mine}
            before, _, after = t("heads.trained.option.mine").partition("{name}")
        names_mine |= asked.startswith(before) and asked.endswith(after)
    return names_mine and asked not in known


def choose_model() -> str:
    """The model picker: the models the operator offers, then the trained Transformers;
    the operator's models that cannot be offered, with why not."""
    choices = model_choices()
    offered = {c.key: c for c in choices if c.offered}
    trained = trained_choices()
    # One of the visitor's models, asked for by a link or chosen in an earlier run, that is
    # not (or no longer) in their folder: the picker falls back to MiniLM, and says why.
    if own_model_missing(st.session_state.get("model", st.query_params.get("model")), trained):
        st.session_state["_heads_missing"] = True
    key = linked_selectbox(
        st,
        t("heads.model"),
        [*offered, *trained],
        SHIPPED_KEY,
        key="model",
        format_func=lambda k: model_label(offered[k]) if k in offered else trained_label(k),
    )
    if st.session_state.get("_heads_missing") and key == SHIPPED_KEY:
        st.info(t("heads.trained.not_saved"))
    else:
        st.session_state.pop("_heads_missing", None)
    refused = [c for c in choices if not c.offered]
    if refused:
        with st.expander(t("heads.refused_title", n=len(refused))):
            for choice in refused:
                st.text(f"{choice.name}: {refusal_text(choice.refused, choice.refused_params)}")
    # Another model has other layers, heads and tokens: its controls start afresh.
    if st.session_state.get("_heads_model", key) != key:
        for name in MODEL_BOUND_KEYS:
            st.session_state.pop(name, None)
    st.session_state["_heads_model"] = key
    return key


def load_or_stop(key: str):
    try:
        return attention_model_shown(key)
    except CheckpointError:  # a visitor's model deleted meanwhile (age limit, size cap)
        st.warning(t("heads.trained.gone"))
    except ModelRefused as refusal:
        # The reason may quote the operator's files (names, model type): shown literally.
        st.error(markdown_literal(refusal_text(refusal.code, refusal.params)))
    except Exception:  # noqa: BLE001  (broken files: say so; the log keeps the details)
        logging.getLogger(__name__).exception("model %s failed to load", key)
        st.error(t("heads.load_failed"))
    st.stop()


def trained_intro(stem: str) -> None:
    """What the trained model is and what it scored; for an induction model, its measured
    induction and previous-token heads, one click away."""
    checkpoint = load_checkpoint(stem)
    st.info(about_trained(checkpoint, "heads.trained.about"))
    if checkpoint.task.get("name") != "induction":
        return
    roles = induction_roles(stem)
    st.caption(induction_roles_text(roles, "heads.trained.roles"))
    shown = (("induction", roles["induction"]), ("previous", roles["previous_token"]))
    for column, (role, (layer, head, _)) in zip(st.columns(2), shown, strict=True):
        if layer >= 0:  # no previous-token head when the induction head is in layer 0
            column.button(
                t(f"heads.trained.jump_{role}", layer=layer, head=head),
                key=f"jump_{role}",
                on_click=set_state,
                args=({"layer": layer, "head": head},),
            )


def intro(cfg, key: str, name: str) -> None:
    sizes = dict(n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_model=cfg.d_model, d_head=cfg.d_head)
    family = FAMILIES.get(cfg.model_type, cfg.model_type)
    if key.startswith(CHECKPOINT_KEY):
        trained_intro(key.removeprefix(CHECKPOINT_KEY))
    elif key == SHIPPED_KEY:
        st.caption(t("heads.intro", model=name, **sizes))
    elif cfg.causal:
        st.caption(t("heads.intro_decoder", model=name, family=family, **sizes))
    else:
        st.caption(t("heads.intro_encoder", model=name, family=family, **sizes))
    if cfg.causal:
        st.info(t("heads.causal"))
    if cfg.n_kv_heads < cfg.n_heads:
        groups = ", ".join(
            f"H{g * cfg.group_size}–H{(g + 1) * cfg.group_size - 1} → KV{g}"
            for g in range(cfg.n_kv_heads)
        )
        st.info(
            t(
                "heads.gqa",
                n_heads=cfg.n_heads,
                n_kv_heads=cfg.n_kv_heads,
                group=cfg.group_size,
                groups=groups,
            )
        )


enter_lesson()
load_grid_charts()
st.header(t("heads.title"))
model_key = cached_key(choose_model())
trained = model_key.startswith(CHECKPOINT_KEY)
encoder = load_or_stop(model_key)
cfg = encoder.cfg
model_name = (
    "" if trained else next((c.name for c in model_choices() if c.key == model_key), model_key)
)
intro(cfg, model_key, model_name)

sentence = sentence_or_stop()

# The shipped model's pass is already running in its worker (ask_pass_ahead): what needs
# no trace, the layer and head choices, is drawn while it runs, below the slot that then
# takes the sentence's tokens.
reading = st.container()
n_layers, n_heads = cfg.n_layers, cfg.n_heads
pick_layer, pick_head = st.columns(2)
# Opens on layer 3, head 1: on the default sentence MiniLM links "it" to "animal" there.
layer = linked_selectbox(
    pick_layer, t("heads.layer"), range(n_layers), min(3, n_layers - 1), key="layer"
)
head = linked_selectbox(pick_head, t("heads.head"), range(n_heads), min(1, n_heads - 1), key="head")

with reading:
    try:
        run = attention_run(model_key, sentence.text)
    except ModelRefused as refusal:  # a model that returns no attention weights
        st.error(markdown_literal(refusal_text(refusal.code, refusal.params)))
        st.stop()
    except Exception:  # noqa: BLE001  (damaged files found only by a pass: the log has them)
        logging.getLogger(__name__).exception("model %s failed on a sentence", model_key)
        st.error(t("heads.run_failed"))
        st.stop()
    tokens = list(run.trace["tokens"])
    show_notes(encoder.reading_notes(run.tokenized, sentence.text))
    reads_task = trained and not encoder.reads_sentence
    st.caption(t("heads.trained.task_tokens" if reads_task else "heads.tokens", n=len(tokens)))
    st.text(" · ".join(tokens))

patterns = stack_patterns(run.trace)
labels = token_labels(tokens)
stats = head_statistics(patterns)
# The keys counted as sinks, by the all-heads summary and the head statistics alike.
sinks = sink_positions(len(tokens), cfg.causal)
n_sink = int(sink_heads(patterns, sinks).sum())
kv_suffix = (lambda h: t("heads.kv_of", kv=cfg.kv_head(h))) if cfg.n_kv_heads < cfg.n_heads else str

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
st.subheader(t("heads.all_title", n_layers=n_layers, n_heads=n_heads))
show_chart(
    all_heads_grid(
        patterns,
        selected=(layer, head),
        hover_text=hover,
        head_title=t("heads.axis.head"),
        layer_title=t("heads.axis.layer"),
    ),
    key="all_heads",
    summary=all_heads_summary(patterns, tokens, run.special_positions, sinks, n_sink=n_sink),
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

# Special tokens ([CLS], [SEP], <s>) are skipped when looking for a strongest link.
specials = run.special_positions
special_names = ", ".join(dict.fromkeys(tokens[i] for i in specials)) or t("heads.no_specials")
one, focus = st.columns(2)
with one:
    st.subheader(t("heads.one_title", layer=layer, head=head))
    if cfg.n_kv_heads < cfg.n_heads:
        st.caption(kv_suffix(head))
    pattern = patterns[layer, head]
    link = strongest_link(pattern, ignore=specials)
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
    st.caption(t("heads.one_caption", others=n_heads - 1))

with focus:
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
        format_func=lambda i: f"{i}: {tokens[i]}",
    )
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
            "weight": patterns[:, :, query, :],
        },
    )
    st.caption(t("heads.focus_caption", count=n_layers * n_heads))
    if best is not None:
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


def statistics_section() -> None:
    # A decoder's last token is seen by the last query alone: only the first token can be a sink.
    stat_names = (
        ("entropy", "distance", "cls") if cfg.causal else ("entropy", "distance", "cls", "sep")
    )
    stat_titles = {name: t(f"heads.stat.{name}") for name in stat_names}
    if cfg.causal:
        stat_titles["cls"] = t("heads.stat.first")
    show_chart(
        statistics_grid(
            {name: stats[name] for name in stat_names},
            titles=stat_titles,
            formats={"entropy": ".2f", "distance": ".1f", "cls": ".0%", "sep": ".0%"},
        ),
        key="summary",
        summary=head_statistics_summary(
            {name: stats[name] for name in stat_names},
            stat_titles,
        ),
        data={"layer": range(n_layers), "head": range(n_heads)}
        | {name: stats[name] for name in stat_names},
    )
    st.caption(t("heads.summary_caption", max_entropy=float(np.log2(len(tokens)))))
    st.info(
        t(
            "heads.sinks_decoder" if cfg.causal else "heads.sinks",
            n_sink=n_sink,
            n_total=n_layers * n_heads,
            first=markdown_literal(tokens[sinks[0]]),
            last=markdown_literal(tokens[sinks[-1]]),
        )
    )


def every_head_grid() -> None:
    try:
        effects = every_head_run(model_key, sentence.text)
    except Superseded:
        raise  # this visitor's newer run draws the page instead (components/frame.py)
    except Unfinished as stopped:
        # Past its deadline (a busy server): said plainly, with a way to ask again.
        st.warning(
            t(
                "heads.effect_unfinished",
                seconds=HEAVY_DEADLINE_S,
                done=stopped.done,
                total=n_layers * n_heads,
            )
        )
        st.button(t("heads.effect_retry"), key="every_head_retry")
        return
    effect_name = "kl" if cfg.causal else "distance"
    strongest = np.unravel_index(int(np.argmax(effects)), effects.shape)
    show_chart(
        statistics_grid(
            {effect_name: effects},
            titles={effect_name: t(f"heads.effect.{effect_name}")},
            formats={effect_name: ".3f" if cfg.causal else ".4f"},
        ),
        key="every_head_effect",
        summary=t(
            "heads.effect_summary",
            layer=int(strongest[0]),
            head=int(strongest[1]),
            value=float(effects[strongest]),
            median=float(np.median(effects)),
        ),
        data={
            "layer": np.repeat(np.arange(n_layers), n_heads),
            "head": np.tile(np.arange(n_heads), n_layers),
            effect_name: effects.reshape(-1),
        },
    )
    st.caption(t("heads.effect_caption"))


def ablation_section() -> None:
    if trained:
        st.caption(t("heads.ablate_intro_trained"))
    else:
        st.caption(t("heads.ablate_intro_decoder" if cfg.causal else "heads.ablate_intro"))
    all_heads = list(range(n_layers * n_heads))
    switched_off = linked_multiselect(
        st,
        t("heads.ablate_heads"),
        all_heads,
        [],
        key="ablate",
        max_selections=len(all_heads),
        format_func=lambda i: head_label(*divmod(i, n_heads)),
    )
    heads_off = tuple(divmod(i, n_heads) for i in sorted(switched_off))
    change = ablation_run(model_key, sentence.text, heads_off) if heads_off else None
    if change is None:
        st.info(t("heads.ablate_none"))
    elif cfg.causal:
        top_before = encoder.vocab_token(change.top_before)
        top_after = encoder.vocab_token(change.top_after)
        shown = [escape_label(encoder.vocab_token(i)) for i in change.token_ids]
        show_chart(
            next_token_figure(
                shown,
                change.before,
                change.after,
                before_name=t("heads.ablate_before"),
                after_name=t("heads.ablate_after", n=len(heads_off)),
                probability_title=t("heads.ablate_probability"),
            ),
            key="ablate_next",
            summary=t(
                "heads.ablate_next_summary",
                before=top_before,
                p_before=float(change.before[0]),
                after=top_after,
                kl=change.kl,
            ),
            data={
                "token": [str(x) for x in shown],
                "probability_all_heads": change.before,
                "probability_heads_off": change.after,
            },
        )
    else:
        token_cosine = np.clip(change.token_cosine, -1.0, 1.0)
        st.metric(t("heads.ablate_cosine"), f"{min(change.cosine, 1.0):.5f}")
        least = int(np.argmin(token_cosine))
        show_chart(
            token_similarity_figure(labels, token_cosine, t("heads.ablate_similarity")),
            key="ablate_tokens",
            summary=t(
                "heads.ablate_tokens_summary",
                cosine=min(change.cosine, 1.0),
                token=tokens[least],
                least=float(token_cosine[least]),
            ),
            data={"token": labels, "cosine_similarity": token_cosine},
        )
    # One pass per head (in batches): run on request, not on every keystroke.
    measured = (model_key, sentence.text)
    if st.session_state.get("_every_head_for") == measured:
        every_head_grid()
    else:
        st.button(
            t("heads.effect_run", count=n_layers * n_heads),
            key="every_head_go",
            on_click=set_state,
            args=({"_every_head_for": measured},),
        )
        st.caption(t("heads.effect_pending", count=n_layers * n_heads))


def rollout_section() -> None:
    rollout = attention_rollout(patterns)
    through = (
        linked_slider(
            st, t("heads.rollout_layer"), 0, n_layers - 1, n_layers - 1, key="rollout_layer"
        )
        if n_layers > 1
        else 0
    )
    flow = rollout[through]
    drawn = position_labels(tokens)  # the chart's labels, as the numbers' row and column names
    q_best, k_best, _ = strongest_link(flow, ignore=specials) or (0, 0, 0.0)
    show_chart(
        head_grid(
            flow,
            tokens,
            query_title=t("heads.query"),
            key_title=t("heads.rollout_input"),
            weight_title=t("heads.rollout_share"),
        ),
        key="rollout",
        summary=t(
            "heads.rollout_summary",
            layer=through,
            query=tokens[q_best],
            key=tokens[k_best],
            share=float(flow[q_best, k_best]),
        ),
        data={"query": drawn, **{label: flow[:, i] for i, label in enumerate(drawn)}},
    )
    st.caption(t("heads.rollout_caption", layer=through))
    st.warning(t("heads.rollout_caveat"))


# One tab at a time: a keystroke redraws the open tab's chart, not all three.
SECTIONS = {
    "statistics": statistics_section,
    "ablation": ablation_section,
    "rollout": rollout_section,
}
view, panel = linked_tabs(
    st,
    SECTIONS,
    "statistics",
    key="view",
    format_func=lambda name: t(f"heads.view.{name}"),
    opened_by={"ablation": ("ablate",), "rollout": ("rollout_layer",)},
)
with panel:
    SECTIONS[view]()
# Drawn: the next run may ask for its pass ahead (and the worker starts, the first time).
leave_pass_ahead("heads", model_key, sentence.text)
