"""Part: switching heads off. The chosen heads off together (what the model's output
becomes), and, on request, every head off alone in turn."""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from components.ablation import next_token_figure, token_similarity_figure
from components.grid import statistics_grid
from components.i18n import t
from components.labels import escape_label, head_label, token_labels
from components.ui.charts import show_chart
from components.ui.linked import linked_multiselect, set_state
from components.ui.parts.heads.reading import Reading
from components.ui.runs.heads import ablation_run, every_head_run
from components.ui.tour import offer
from models.serving import runtime
from models.serving.fair_slots import Superseded, Unfinished


def _head_option(n_heads: int, i: int) -> str:
    return head_label(*divmod(i, n_heads))


def draw(reading: Reading) -> None:
    cfg, encoder = reading.cfg, reading.encoder
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    if reading.trained:
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
        format_func=partial(_head_option, n_heads),
    )
    heads_off = tuple(divmod(i, n_heads) for i in sorted(switched_off))
    change = ablation_run(reading.key, reading.text, heads_off) if heads_off else None
    _offer(heads_off, change, bool(cfg.causal))
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
        tokens, labels = reading.tokens, token_labels(reading.tokens)
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
    measured = (reading.key, reading.text)
    if st.session_state.get("_every_head_for") == measured:
        every_head_grid(reading)
    else:
        st.button(
            t("heads.effect_run", count=n_layers * n_heads),
            key="every_head_go",
            on_click=set_state,
            args=({"_every_head_for": measured},),
        )
        st.caption(t("heads.effect_pending", count=n_layers * n_heads))


def _offer(heads_off: tuple, change, causal: bool) -> None:
    """What the chart and the metric above it show: with no head off, the output is the
    original one (similarity 1, divergence 0)."""
    if change is None:
        offer("heads.ablation", heads_off=heads_off, causal=causal, cosine=1.0, kl=0.0)
    elif causal:
        offer("heads.ablation", heads_off=heads_off, causal=True, cosine=None, kl=change.kl)
    else:
        cosine = min(change.cosine, 1.0)  # as the metric shows it
        offer("heads.ablation", heads_off=heads_off, causal=False, cosine=cosine, kl=None)


def every_head_grid(reading: Reading) -> None:
    cfg = reading.cfg
    n_layers, n_heads = cfg.n_layers, cfg.n_heads
    try:
        effects = every_head_run(reading.key, reading.text)
    except Superseded:
        raise  # this visitor's newer run draws the page instead (components/ui/frame.py)
    except Unfinished as stopped:
        # Past its deadline (a busy server): said plainly, with a way to ask again.
        st.warning(
            t(
                "heads.effect_unfinished",
                seconds=runtime.HEAVY_DEADLINE_S,  # the deadline heavy_work read, at this run
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
