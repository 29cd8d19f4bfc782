"""Part "rope": RoPE scores by offset, and what each encoding does past the length a model
was built for."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.positional import SCHEME_COLORS, curves_figure, extrapolation_figure, matrix_figure
from components.summaries import diagonal_summary, lines_summary, values_at_summary
from components.ui.charts import show_chart
from components.ui.linked import linked_slider
from components.ui.runs.positional import learned_table
from components.ui.runs.shared import load_transformer
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import positional as pe


def draw(cfg, n: int) -> None:
    """RoPE scores by offset, and what each encoding does past the length a model was built for."""
    draw_rope(cfg, n)
    draw_extrapolation(cfg)


def draw_rope(cfg, n: int) -> None:
    """RoPE's scores over a grid of positions as large as the sentence, shifted, and how
    they fade with distance for a few head sizes."""
    st.subheader(t("positional.rope.title"))
    shift = linked_slider(st, t("positional.rope.shift"), 0, 2000, 300, key="pe_shift")
    q_vec, k_vec = pe.rope_demo_vectors(cfg.d_head)
    grid = int(np.clip(n, 8, 48))
    scores = pe.rope_scores(q_vec, k_vec, grid)
    shifted = pe.rope_scores(q_vec, k_vec, grid, start=shift)
    shift_error = float(np.abs(shifted - scores).max())
    positions = np.arange(shift, shift + grid)
    offer("positional.rope", shift=shift, positions=positions, scores=shifted, unshifted=scores)
    # A tour's question on the grid waits for the learner's prediction: the grid and the
    # sentence that reads it.
    hidden = held_back("positional.rope_grid")
    rope_left, rope_right = st.columns(2)
    with rope_left:
        if hidden:
            show_held_back()
        else:
            show_chart(
                matrix_figure(
                    shifted,
                    title=t("positional.rope.grid", start=shift, stop=shift + grid - 1),
                    x_title=t("positional.rope.key_pos"),
                    y_title=t("positional.rope.query_pos"),
                    x_labels=positions,
                    y_labels=positions,
                    value_name="q·k",
                ),
                key="pe_rope_grid",
                summary=diagonal_summary(shifted),
                data={
                    "query_position": positions,
                    "key_position": positions,
                    "score": shifted,
                },
            )
    with rope_right:
        max_distance = 512
        distances = np.arange(max_distance + 1)
        decays = {f"d_head {d}": pe.rope_decay(d, max_distance) for d in (16, 64, 128)}
        show_chart(
            curves_figure(
                decays,
                distances,
                title=t("positional.rope.decay"),
                x_title=t("positional.distance"),
                y_title=t("positional.rope.decay_axis"),
            ),
            key="pe_rope_decay",
            summary=lines_summary({name: (distances, y) for name, y in decays.items()}),
            data={"distance": distances} | decays,
        )
    if not hidden:
        st.caption(
            t(
                "positional.rope.explain",
                shift=shift,
                error=shift_error,
                grid=grid,
                d_head=cfg.d_head,
            )
        )


def draw_extrapolation(cfg) -> None:
    """Each encoding's positional score by distance, up to four times the length built for."""
    st.subheader(t("positional.extrapolation.title"))
    built = linked_slider(st, t("positional.extrapolation.built"), 8, 128, 32, key="pe_built")
    reach = 4 * built
    profiles = {
        t(f"positional.scheme.{s}"): pe.positional_score_by_distance(
            s, cfg.d_head if s == "rope" else cfg.d_model, reach, learned=learned_table(built)
        )
        for s in pe.SCHEMES
    }
    distances = np.arange(reach + 1)
    sizes = {"sinusoidal": cfg.d_model, "rope": cfg.d_head}
    turns = {s: pe.periods_within(d, built) for s, d in sizes.items()}
    offer(
        "positional.extrapolation",
        built=built,
        turns=turns,
        pairs={s: d // 2 for s, d in sizes.items()},
    )
    alibi = t("positional.scheme.alibi")
    show_chart(
        extrapolation_figure(
            {name: y for name, y in profiles.items() if name != alibi},
            {alibi: profiles[alibi]},
            distances,
            similarity_title=t("positional.extrapolation.axis"),
            bias_title=t("positional.extrapolation.bias_axis"),
            title=t("positional.extrapolation.figure"),
            x_title=t("positional.distance"),
            colors={t(f"positional.scheme.{s}"): SCHEME_COLORS[s] for s in pe.SCHEMES},
            marker_at=built,
            marker_text=t("positional.extrapolation.marker", built=built),
        ),
        key="pe_extrapolation",
        summary=values_at_summary({name: (distances, y) for name, y in profiles.items()}, built),
        data={"distance": distances} | profiles,
    )
    # Asked for one position more than it has rows, the learned model refuses: its refusal,
    # in the visitor's language.
    try:
        load_transformer("learned").pos_embed(cfg.n_ctx + 1)
        learned_message = ""
    except ValueError:
        learned_message = t("positional.extrapolation.no_row", rows=cfg.n_ctx, pos=cfg.n_ctx)
    slopes = pe.alibi_slopes(cfg.n_heads)
    st.caption(
        t(
            "positional.extrapolation.explain",
            built=built,
            sin_turns=turns["sinusoidal"],
            sin_pairs=cfg.d_model // 2,
            rope_turns=turns["rope"],
            rope_pairs=cfg.d_head // 2,
            n_ctx=cfg.n_ctx,
            learned_message=learned_message,
            d_head=cfg.d_head,
            gentle=float(slopes[-1]),
            far=reach,
            alibi_weight=float(np.exp(-slopes[-1] * reach)),
            next_m=float(slopes[-2]),
            next_weight=float(np.exp(-slopes[-2] * reach)),
        )
    )
