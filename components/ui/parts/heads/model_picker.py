"""The attention lesson's shared control: which model reads the sentence.

The models the server's operator offers (models/serving/catalog.py), the Transformers
SeqLens ships trained, and the visitor's own (models/analysis/trained_attention.py); then
the chosen model loaded, and a few lines on what it is. A sentence written mostly in
Chinese characters is offered the model that reads it (the Chinese character model), one
click away; that model, given a sentence that is not, offers the way back.
"""

from __future__ import annotations

import logging
from functools import partial

import streamlit as st

from components.cjk import han_share, mostly_chinese
from components.i18n import LANGUAGES, t, using_language
from components.labels import markdown_literal
from components.ui.linked import linked_selectbox, set_state
from components.ui.runs.heads import (
    CHECKPOINT_KEY,
    attention_model,
    attention_model_shown,
    model_choices,
)
from components.ui.runs.shared import (
    about_trained,
    induction_roles,
    induction_roles_text,
    load_checkpoint,
    load_visitor_store,
    previous_char_head,
    trained_stem,
)
from components.ui.sentence import current_sentence, stop_page
from components.ui.visitor_links import visitor_id
from models.analysis import trained_sources as ts
from models.serving.catalog import SHIPPED_KEY
from models.serving.model_files import ModelRefused
from models.text import READ_CHARS
from models.training.checkpoints import CheckpointError
from models.training.train import CHINESE_LM

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
# The shipped Transformer trained on Chinese text: offered for a sentence mostly in Chinese.
CHINESE = TRAINED + CHINESE_LM


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
    shipped = (ts.SHIPPED_INDUCTION, CHINESE_LM, *ts.SHIPPED_TRANSFORMERS[1:])
    return [TRAINED + name for name in shipped] + [MINE + name for name in saved]


def trained_label(key: str) -> str:
    if key.startswith(TRAINED):
        return t(f"heads.trained.option.{key.removeprefix(TRAINED)}")
    return t("heads.trained.option.mine", name=key.removeprefix(MINE))


def _choice_label(offered: dict, key: str) -> str:
    return model_label(offered[key]) if key in offered else trained_label(key)


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
        format_func=partial(_choice_label, offered),
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
    stop_page()


def model_name(key: str) -> str:
    """The catalogue's name of the model `key` names; none for a trained Transformer."""
    if key.startswith(CHECKPOINT_KEY):
        return ""
    return next((c.name for c in model_choices() if c.key == key), key)


def unread_pieces(key: str, text: str) -> int | None:
    """How many pieces of `text` the model `key` (a cached key) reads as its unknown token,
    or how many of its characters a trained model's alphabet lacks; None for a model of
    another task, which reads its own sequences."""
    encoder = attention_model(key)
    if key.startswith(CHECKPOINT_KEY):
        if not encoder.reads_sentence:
            return None
        return len(ts.read(encoder.task_config, text, READ_CHARS).unknown)
    return len(encoder.tokenize(text).unknown_spans(text, encoder.unknown_token))


def offer_reader(key: str) -> None:
    """For a sentence mostly in Chinese characters, the model that reads it, one click
    away; the Chinese model, given a sentence that is not, the way back to MiniLM."""
    text = current_sentence().text
    chinese = key == cached_key(CHINESE)
    if mostly_chinese(text) == chinese:
        return
    unread = unread_pieces(key, text)
    if chinese:
        if not unread:
            return
        st.info(t("heads.cjk.not_chinese", n=unread))
        choice, button = {"model": SHIPPED_KEY}, "heads.cjk.back"
    else:
        share = han_share(text)
        if unread is None:
            st.info(t("heads.cjk.offer_task", share=share))
        elif unread:
            st.info(t("heads.cjk.offer_unknown", share=share, n=unread))
        else:
            st.info(t("heads.cjk.offer", share=share))
        choice, button = {"model": CHINESE}, "heads.cjk.switch"
    st.button(t(button), key="cjk_switch", on_click=set_state, args=(choice,))


def previous_char_intro(stem: str) -> None:
    """The Chinese model's measured previous-character head, one click away."""
    layer, head, score, even = previous_char_head(stem)
    st.caption(t("heads.cjk.previous_head", layer=layer, head=head, score=score, even=even))
    st.button(
        t("heads.cjk.jump_previous", layer=layer, head=head),
        key="jump_previous_char",
        on_click=set_state,
        args=({"layer": layer, "head": head},),
    )


def trained_intro(stem: str) -> None:
    """What the trained model is and what it scored; for an induction model, its measured
    induction and previous-token heads, one click away; for the Chinese model, its
    previous-character head."""
    checkpoint = load_checkpoint(stem)
    if checkpoint.task.get("text") == "zh":
        st.info(about_trained(checkpoint, "heads.cjk.about"))
        previous_char_intro(stem)
        return
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
