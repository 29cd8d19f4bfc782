"""Lesson: positional encodings, measured on the visitor's sentence and a small Transformer."""

import numpy as np
import pyarrow as pa
import streamlit as st

from components.i18n import t
from components.labels import token_labels
from components.masks import step_heatmap
from components.positional import (
    SCHEME_COLORS,
    curves_figure,
    encoding_figure,
    error_bars_figure,
    extrapolation_figure,
    matrix_figure,
    per_token_figure,
    scheme_label,
)
from components.summaries import (
    SEPARATOR,
    bars_summary,
    diagonal_summary,
    encoding_summary,
    lines_summary,
    peaks_summary,
    per_token_summary,
    rotation_summary,
    values_at_summary,
    waves_summary,
)
from components.ui.charts import show_chart
from components.ui.frame import enter_lesson
from components.ui.linked import linked_multiselect, linked_selectbox, linked_slider, linked_tabs
from components.ui.runs.shared import (
    load_checkpoint,
    load_tokenizer,
    load_transformer,
    load_visitor_store,
    trained_stem,
)
from components.ui.sentence import sentence_or_stop, show_notes
from components.ui.visitor_links import visitor_id
from models.analysis import positional as pe
from models.analysis import trained_sources as ts
from models.nets.tokenizer import MAX_TOKENS
from models.text import tokenization_notes
from models.training.checkpoints import CheckpointError

enter_lesson()

ORDER_PAIRS = (("dog bites man", "man bites dog"), ("我爱你", "你爱我"))


def transformers() -> dict:
    """The lesson's random Transformer for every scheme (shared, only ever read)."""
    return {scheme: load_transformer(scheme) for scheme in pe.SCHEMES}


# The cached functions stay short: Streamlit reads a cached function's source on every
# rerun of the page that defines it (~0.25 ms for a few lines, ~0.5 ms for twenty).
@st.cache_data(max_entries=64, show_spinner=False)
def order_effects(ids: tuple[int, ...], order: str, seed: int) -> dict:
    return pe.order_effects(transformers(), ids, order, seed)


@st.cache_data(show_spinner=False)
def pair_distances() -> list[tuple[str, str, float]]:
    return pe.pair_distances(transformers(), load_tokenizer(), ORDER_PAIRS)


@st.cache_data(max_entries=16, show_spinner=False)
def training_views(stem: str) -> dict:
    """What the lesson shows of the trained model `stem` names, before ("before": as built,
    ts.untrained) and after training: each head's attention from position alone, its mean
    weight by offset, and the mean cosine of neighbouring positions. It reads no sentence."""
    trained = load_checkpoint(stem).model
    views = {}
    for when, model in (("before", ts.untrained(trained)), ("after", trained)):
        pattern = ts.positional_attention(model.core)
        views[when] = {
            "pattern": pattern,
            "by_offset": ts.weight_by_offset(pattern),
            "near": float(ts.cosine_by_offset(ts.position_cosines(model.core.W_pos.numpy()))[1]),
        }
    return views


def trained_label(name: str) -> str:
    if name in ts.SHIPPED_TRANSFORMERS:
        return t(f"positional.trained.{name}")
    return t("positional.trained.mine", name=name)


def learned_table(n_pos: int) -> np.ndarray:
    return load_transformer("learned").W_pos[:n_pos].numpy().astype(np.float64)


cfg = load_transformer("sinusoidal").cfg
st.header(t("positional.title"))
st.caption(
    t(
        "positional.intro",
        d_model=cfg.d_model,
        n_heads=cfg.n_heads,
        d_head=cfg.d_head,
        n_layers=cfg.n_layers,
        n_ctx=cfg.n_ctx,
    )
)

sentence = sentence_or_stop()
# Read whatever tab is open: a visitor key in the link is taken out of the address bar
# (and a bad one noted) at once, not only when the tab with the trained models opens.
me = visitor_id()

tokenizer = load_tokenizer()
encoded = tokenizer.encode(sentence.text, MAX_TOKENS)
show_notes(
    tokenization_notes(
        len(encoded.ids),
        encoded.n_tokens_before_cap,
        MAX_TOKENS,
        encoded.unknown_spans(sentence.text),
        vocabulary="own_",
    )
)
tokens = list(encoded.tokens)
n = len(tokens)
st.caption(t("positional.tokens", n=n))
st.text(" · ".join(tokens))


def sentence_view() -> None:
    """The table over your sentence and past its end; what reordering your tokens changes."""
    st.subheader(t("positional.table.title"))
    span = min(max(2 * n, n + 32), cfg.n_ctx)
    left, right = st.columns(2)
    table_scheme = linked_selectbox(
        left,
        t("positional.table.scheme"),
        ("sinusoidal", "learned"),
        "sinusoidal",
        key="pe_table",
        format_func=lambda s: t(f"positional.scheme.{s}"),
    )
    dims = linked_multiselect(
        right,
        t("positional.table.dims"),
        range(cfg.d_model),
        [0, 1, 20, 40],
        key="pe_dims",
        max_selections=6,
    )
    table = pe.sinusoidal_table(span, cfg.d_model) if table_scheme == "sinusoidal" else None
    if table is None:
        table = learned_table(span)
    end_text = t("positional.sentence_end")
    positions = np.arange(span)
    dims = sorted(dims)
    # One chart: the table and, under it, the chosen dimensions over the same positions;
    # the download holds the whole table (the curves are columns of it).
    show_chart(
        encoding_figure(table, dims, n, end_text=end_text),
        key="pe_heatmap",
        summary=SEPARATOR.join(
            [encoding_summary(table, n)] + ([waves_summary(table, dims)] if dims else [])
        ),
        data={"position": positions, "dimension": np.arange(cfg.d_model), "value": table}
        | {t("chart.dim", dim=d): table[:, d] for d in dims},
    )
    st.caption(
        t(
            f"positional.table.explain.{table_scheme}",
            span=span,
            span_last=span - 1,
            n=n,
            d_model=cfg.d_model,
        )
    )
    st.subheader(t("positional.order.title"))
    notes = []
    if n < 2:
        st.info(t("positional.order.too_short"))
    else:
        order_col, seed_col = st.columns(2)
        order = linked_selectbox(
            order_col,
            t("positional.order.how"),
            ("reverse", "rotate", "shuffle"),
            "reverse",
            key="pe_order",
            format_func=lambda o: t(f"positional.order.{o}"),
        )
        seed = linked_slider(
            seed_col,
            t("positional.order.seed"),
            0,
            99,
            0,
            key="pe_seed",
            disabled=order != "shuffle",
        )
        effects = order_effects(tuple(encoded.ids), order, seed)
        perm = effects["perm"]
        st.caption(t("positional.order.reordered"))
        st.text(" · ".join(tokens[i] for i in perm))
        bar_col, token_col = st.columns([1, 2])
        largest = {scheme_label(s): effects[s]["max_error"] for s in pe.SCHEMES}
        moved = {s: effects[s]["per_token"] for s in pe.SCHEMES}
        with bar_col:
            show_chart(
                error_bars_figure(
                    {s: effects[s]["max_error"] for s in pe.SCHEMES},
                    title=t("positional.order.max_title"),
                    y_title=t("chart.max_error"),
                    threshold=1e-5,
                ),
                key="pe_order_max",
                summary=bars_summary(largest),
                data={"encoding": list(largest), "max_error": list(largest.values())},
            )
        with token_col:
            show_chart(
                per_token_figure(
                    moved,
                    token_labels(tokens),
                    title=t("positional.order.token_title"),
                    y_title=t("positional.order.token_axis"),
                ),
                key="pe_order_tokens",
                summary=per_token_summary({scheme_label(s): v for s, v in moved.items()}, tokens),
                data={"token": tokens} | {scheme_label(s): v for s, v in moved.items()},
            )
        # One caption: what the charts show, then what the table below shows.
        notes.append(
            t(
                "positional.order.explain",
                none=effects["none"]["max_error"],
                sinusoidal=effects["sinusoidal"]["max_error"],
                scale=effects["none"]["scale"],
            )
        )
    pairs, schemes, pooled = zip(*pair_distances(), strict=True)
    st.caption("\n\n".join([*notes, t("positional.order.pairs")]))
    # An Arrow table is drawn as it is; rows of dicts would go through pandas first.
    table = {
        t("positional.order.pair"): pairs,
        t("positional.order.scheme"): [t(f"positional.scheme.{s}") for s in schemes],
        t("positional.order.pooled"): pooled,
    }
    st.dataframe(pa.table(table), hide_index=True, width="content")


def sinusoidal_view() -> None:
    """How alike two positions are, and the shift of a sinusoidal position as a rotation."""
    st.subheader(t("positional.similarity.title"))
    refs = [0, 16, 64, 256]
    max_offset = 128
    sims = {
        "sinusoidal": pe.similarity_by_offset(
            pe.sinusoidal_table(cfg.n_ctx, cfg.d_model), refs, 128
        ),
        "learned": pe.similarity_by_offset(learned_table(cfg.n_ctx), refs, max_offset),
    }
    offsets = np.arange(max_offset + 1)
    sim_cols = st.columns(2)
    for col, (scheme, curves) in zip(sim_cols, sims.items(), strict=True):
        named = {
            t("positional.similarity.from", ref=ref): row
            for ref, row in zip(refs, curves, strict=True)
        }
        with col:
            show_chart(
                curves_figure(
                    named,
                    offsets,
                    title=t(f"positional.scheme.{scheme}"),
                    x_title=t("positional.offset"),
                    y_title="PE(p)·PE(p+k)",
                ),
                key=f"pe_similarity_{scheme}",
                summary=scheme_label(scheme)
                + ": "
                + lines_summary({name: (offsets, row) for name, row in named.items()}),
                data={"offset": offsets} | named,
            )
    spread = float(np.nanmax(np.ptp(sims["sinusoidal"], axis=0)))
    spread_learned = float(np.nanmax(np.ptp(sims["learned"], axis=0)))
    st.caption(
        t(
            "positional.similarity.explain",
            spread=spread,
            spread_learned=spread_learned,
            half=cfg.d_model // 2,
        )
    )
    st.subheader(t("positional.rotation.title"))
    k = linked_slider(st, t("positional.rotation.offset"), 1, 128, 5, key="pe_offset")
    fit = pe.rotation_fit(k, cfg.d_model, cfg.n_ctx)
    rotation = fit["rotation"]
    rot_left, rot_right = st.columns(2)
    with rot_left:
        show_chart(
            matrix_figure(
                rotation,
                title=t("positional.rotation.matrix", k=k),
                x_title=t("positional.rotation.in_dim"),
                y_title=t("positional.rotation.out_dim"),
            ),
            key="pe_rotation_matrix",
            summary=rotation_summary(rotation, k),
            data={
                "output_dimension": np.arange(cfg.d_model),
                "input_dimension": np.arange(cfg.d_model),
            }
            | {f"M_{k}": rotation},
        )
    with rot_right:
        starts = np.arange(cfg.n_ctx - k)
        errors = {
            t("positional.rotation.exact_curve"): fit["exact"],
            t("positional.rotation.naive_curve"): fit["naive"],
        }
        show_chart(
            curves_figure(
                errors,
                starts,
                title=t("positional.rotation.errors", k=k),
                x_title=t("positional.position"),
                y_title=t("chart.max_error"),
                log_y=True,
            ),
            key="pe_rotation_errors",
            summary=peaks_summary({name: (starts, y) for name, y in errors.items()}),
            data={"position": starts} | errors,
        )
    st.caption(
        t(
            "positional.rotation.explain",
            k=k,
            exact=fit["exact_max"],
            naive=fit["naive_max"],
            all_k=pe.rotation_check(cfg.d_model, cfg.n_ctx),
            k_last=cfg.n_ctx // 2 - 1,
            n_pos=cfg.n_ctx,
        )
    )


def rope_view() -> None:
    """RoPE scores by offset, and what each encoding does past the length a model was built for."""
    st.subheader(t("positional.rope.title"))
    shift = linked_slider(st, t("positional.rope.shift"), 0, 2000, 300, key="pe_shift")
    q_vec, k_vec = pe.rope_demo_vectors(cfg.d_head)
    grid = int(np.clip(n, 8, 48))
    scores = pe.rope_scores(q_vec, k_vec, grid)
    shifted = pe.rope_scores(q_vec, k_vec, grid, start=shift)
    shift_error = float(np.abs(shifted - scores).max())
    rope_left, rope_right = st.columns(2)
    with rope_left:
        show_chart(
            matrix_figure(
                shifted,
                title=t("positional.rope.grid", start=shift, stop=shift + grid - 1),
                x_title=t("positional.rope.key_pos"),
                y_title=t("positional.rope.query_pos"),
                x_labels=np.arange(shift, shift + grid),
                y_labels=np.arange(shift, shift + grid),
                value_name="q·k",
            ),
            key="pe_rope_grid",
            summary=diagonal_summary(shifted),
            data={
                "query_position": np.arange(shift, shift + grid),
                "key_position": np.arange(shift, shift + grid),
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
    st.caption(
        t("positional.rope.explain", shift=shift, error=shift_error, grid=grid, d_head=cfg.d_head)
    )
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
            sin_turns=pe.periods_within(cfg.d_model, built),
            sin_pairs=cfg.d_model // 2,
            rope_turns=pe.periods_within(cfg.d_head, built),
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


def trained_view() -> None:
    """What training makes of a learned table."""
    st.subheader(t("positional.trained.title"))
    trained_col, head_col = st.columns([2, 1])
    trained_name = linked_selectbox(
        trained_col,
        t("positional.trained.model"),
        (*ts.SHIPPED_TRANSFORMERS, *ts.saved_transformers(load_visitor_store().list(me))),
        ts.SHIPPED_TRANSFORMERS[0],
        key="pe_trained",
        format_func=trained_label,
    )
    try:
        trained = load_checkpoint(trained_stem(trained_name))
    except CheckpointError:  # a visitor's model deleted meanwhile (age limit, size cap)
        trained = None
        st.warning(t("positional.trained.gone"))
    if trained is not None and trained.model.core.cfg.positional != "learned":
        trained = None
        st.info(t("positional.trained.no_table"))
    if trained is not None:
        core = trained.model.core
        trained_head = linked_slider(
            head_col,
            t("positional.trained.head"),
            0,
            core.cfg.n_heads - 1,
            0,
            key="pe_trained_head",
        )
        spec, metrics = trained.config.get("model", {}), trained.metrics
        st.info(
            t(
                "positional.trained.about",
                model=trained_label(trained_name),
                n_layers=spec.get("n_layers"),
                n_heads=spec.get("n_heads"),
                d_model=spec.get("d_model"),
                n_ctx=spec.get("n_ctx"),
                steps=trained.config.get("training", {}).get("steps", "?"),
                accuracy=metrics.get("accuracy", float("nan")),
            )
        )
        stem = trained_stem(trained_name)
        views = training_views(stem)
        patterns = {when: view["pattern"] for when, view in views.items()}
        offsets = {when: view["by_offset"] for when, view in views.items()}
        strongest = {
            when: (int(np.argmax(w[trained_head])), float(np.max(w[trained_head])))
            for when, w in offsets.items()
        }
        positions = [str(i) for i in range(core.cfg.n_ctx)]
        # The model's own causal mask: keys after the query, drawn grey.
        future = np.triu(np.ones((core.cfg.n_ctx, core.cfg.n_ctx), dtype=bool), 1)
        future &= bool(core.cfg.causal)
        for column, (when, pattern) in zip(st.columns(2), patterns.items(), strict=True):
            offset, share = strongest[when]
            with column:
                show_chart(
                    step_heatmap(
                        pattern[trained_head],
                        t(f"positional.trained.{when}", head=trained_head),
                        positions,
                        positions,
                        x_title=t("positional.rope.key_pos"),
                        y_title=t("positional.rope.query_pos"),
                        masked=future,
                        masked_text="0",
                        weights=True,
                        value_name=t("positional.trained.weight"),
                        cell_text=False,
                    ),
                    key=f"pe_trained_{when}",
                    summary=t(
                        "positional.trained.summary",
                        when=t(f"positional.trained.{when}_short"),
                        head=trained_head,
                        offset=offset,
                        share=share,
                    ),
                    data={"query": positions, "key": positions, "weight": pattern[trained_head]},
                )
        after = offsets["after"]
        ks = np.arange(after.shape[1])
        per_head = {t("positional.trained.head_line", head=h): after[h] for h in range(len(after))}
        show_chart(
            curves_figure(
                per_head,
                ks,
                title=t("positional.trained.by_offset"),
                x_title=t("positional.trained.offset_axis"),
                y_title=t("positional.trained.mean_weight"),
            ),
            key="pe_trained_offset",
            summary=" · ".join(
                t(
                    "positional.trained.head_peak",
                    head=h,
                    offset=int(np.argmax(w)),
                    share=float(w.max()),
                )
                for h, w in enumerate(after)
            ),
            data={"offset": ks} | per_head,
        )
        near = {when: view["near"] for when, view in views.items()}
        st.caption(
            t(
                "positional.trained.explain",
                head=trained_head,
                offset=strongest["after"][0],
                share=strongest["after"][1],
                before=float(offsets["before"][trained_head][strongest["after"][0]]),
                near_before=near["before"],
                near_after=near["after"],
                n=core.cfg.n_ctx,
            )
            + (
                " " + t("positional.trained.induction")
                if trained.task.get("name") == "induction"
                else ""
            )
        )


# One tab at a time: a keystroke redraws the open tab, not the whole lesson. The first
# tab holds what reads the visitor's sentence; the others read only their own controls.
VIEWS = {
    "sentence": sentence_view,
    "sinusoidal": sinusoidal_view,
    "rope": rope_view,
    "trained": trained_view,
}
view, panel = linked_tabs(
    st,
    VIEWS,
    "sentence",
    key="pe_view",
    format_func=lambda name: t(f"positional.view.{name}"),
    opened_by={
        "sinusoidal": ("pe_offset",),
        "rope": ("pe_shift", "pe_built"),
        "trained": ("pe_trained", "pe_trained_head"),
    },
)
with panel:
    VIEWS[view]()
