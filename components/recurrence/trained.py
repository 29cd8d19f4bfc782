"""Figures of "Trained, not only random": the measured table of recurrence against attention
(held-out accuracy per task and kind; time per training step and per generated token at two
lengths), and the trained selective SSM reading one selective-copying sequence.

Bars are plotly figures built as plain dicts. A value the table does not have (a kind with no
checkpoint, a model with no step from a carried state) is never drawn as a bar: its place on
the axis stays, with a word written upright in it. Labels come escaped for plotly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.grid import TOKEN_ANGLE
from components.i18n import t
from components.layout import frame_layout, grid_layout, subplot_suffix
from components.layout import hline as hline_shape
from components.palette import BLUE, ORANGE, VERMILLION
from components.summaries import SEPARATOR, number

# The positions of a selective-copying sequence (models/analysis/trained_selective.py KINDS)
# and how they are marked: symbols stand out, blanks recede, markers in the answer's colour.
KIND_STYLES = {
    "symbol": dict(color=VERMILLION, size=10, symbol="diamond"),
    "blank": dict(color="#9a9a9a", size=5, symbol="circle"),
    "recall": dict(color=BLUE, size=9, symbol="square"),
}
LENGTH_COLORS = (BLUE, ORANGE)
ANSWER_SHADE = "rgba(0, 114, 178, 0.08)"
MISSING_FONT = dict(size=12, color="#7f7f7f")


def _finite(value) -> bool:
    return value is not None and np.isfinite(float(value))


def _missing_mark(x: str, text: str, suffix: str) -> dict:
    """A word standing upright on the axis at category `x`, where a bar would be."""
    return dict(
        x=x,
        y=0,
        xref=f"x{suffix}",
        yref=f"y{suffix} domain",
        text=text,
        textangle=-90,
        showarrow=False,
        xanchor="center",
        yanchor="bottom",
        font=MISSING_FONT,
    )


def duration(seconds: float) -> str:
    """A time as the table's charts write it, three significant digits in a unit that
    keeps it between 1 and 1000: 48.4 µs, 22.2 ms, 3.77 s."""
    shown, unit = float(seconds) * 1e6, "µs"
    for larger in ("ms", "s"):
        if abs(float(f"{shown:.3g}")) < 1000:  # rounded first: 999.7 µs is written 1 ms
            break
        shown, unit = shown / 1000, larger
    return f"{number(shown)} {unit}"


def percent(value) -> str:
    """An accuracy as a chart writes it above its bar: 99.3%."""
    return f"{100 * float(value):.1f}%"


# --- held-out accuracy --------------------------------------------------------------------


def accuracy_figure(
    accuracy: Mapping[str, Mapping[str, float | None]],
    chance: Mapping[str, float],
    colors: Mapping[str, str],
    not_trained: str,
    title: str = "",
    y_title: str = "",
) -> PlainFigure:
    """One panel per task (`accuracy[task][kind]`, in [0, 1] or None), a bar per kind in
    its colour, the task's chance level dashed; None is no bar but `not_trained` written
    upright in the bar's place. Tasks and kinds come escaped."""
    tasks = list(accuracy)
    layout = grid_layout(1, len(tasks), tuple(tasks), horizontal_spacing=0.07)
    traces, shapes, marks = [], [], list(layout.get("annotations", []))
    for col, task in enumerate(tasks, start=1):
        suffix = subplot_suffix(1, col, len(tasks))
        kinds = list(accuracy[task])
        drawn = [kind for kind in kinds if _finite(accuracy[task][kind])]
        values = [float(accuracy[task][kind]) for kind in drawn]
        traces.append(
            dict(
                type="bar",
                x=drawn,
                y=values,
                marker=dict(color=[colors.get(kind, BLUE) for kind in drawn]),
                text=[percent(v) for v in values],
                textposition="outside",
                cliponaxis=False,
                hovertemplate="%{x}: %{y:.4f}<extra>" + task + "</extra>",
                showlegend=False,
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
            )
        )
        marks += [_missing_mark(k, not_trained, suffix) for k in kinds if k not in drawn]
        if task in chance:
            shapes.append(hline_shape(chance[task], dict(dash="dash", width=1.5), suffix))
        layout[f"xaxis{suffix}"].update(
            type="category", categoryorder="array", categoryarray=kinds, automargin=True
        )
        layout[f"yaxis{suffix}"].update(range=[0, 1.12], tickformat=".0%", automargin=True)
    layout["yaxis"]["title"] = dict(text=y_title)
    layout.update(frame_layout(title, 400, top=80, bottom=40), shapes=shapes, annotations=marks)
    return figure(traces, layout)


def accuracy_summary(
    accuracy: Mapping[str, Mapping[str, float | None]], chance: Mapping[str, float]
) -> str:
    """Each task's kinds, best first, then the kinds it has no checkpoint of, and chance."""
    parts = []
    for task, row in accuracy.items():
        drawn = sorted(
            ((kind, float(v)) for kind, v in row.items() if _finite(v)), key=lambda kv: -kv[1]
        )
        missing = [kind for kind, v in row.items() if not _finite(v)]
        text = ", ".join(f"{kind} {percent(v)}" for kind, v in drawn)
        if missing:
            text += t("recurrence.trained.summary_not_trained", kinds=", ".join(missing))
        if task in chance:
            text += t("recurrence.trained.summary_chance", chance=percent(chance[task]))
        parts.append(f"{task}: {text}")
    return SEPARATOR.join(parts)


# --- time per step ------------------------------------------------------------------------


def timing_figure(
    seconds: Mapping[str, Mapping[str, Mapping[str, float | None]]],
    measures: Mapping[str, str],
    lengths: Mapping[str, str],
    no_step: str,
    title: str = "",
    y_title: str = "",
) -> PlainFigure:
    """One panel per measure (`measures`: its key in the table → its title), a group of
    bars per kind, one bar per length (`lengths`: its key → its legend name), on a log axis;
    `seconds[kind][length][measure]` are drawn in milliseconds. A kind with no value at any
    length gets `no_step` upright in its place. Kinds and titles come escaped."""
    kinds = list(seconds)
    keys = list(measures)
    layout = grid_layout(1, len(keys), tuple(measures.values()), horizontal_spacing=0.06)
    traces, marks = [], list(layout.get("annotations", []))
    for col, measure in enumerate(keys, start=1):
        suffix = subplot_suffix(1, col, len(keys))
        for index, (length, name) in enumerate(lengths.items()):
            drawn = [k for k in kinds if _finite(seconds[k][length].get(measure))]
            ms = [1000 * float(seconds[k][length][measure]) for k in drawn]
            traces.append(
                dict(
                    type="bar",
                    x=drawn,
                    y=ms,
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    marker=dict(color=LENGTH_COLORS[index % len(LENGTH_COLORS)]),
                    customdata=[duration(v / 1000) for v in ms],
                    hovertemplate=f"%{{x}}, {name}: %{{customdata}}<extra></extra>",
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                )
            )
        absent = [k for k in kinds if not any(_finite(seconds[k][n].get(measure)) for n in lengths)]
        marks += [_missing_mark(k, no_step, suffix) for k in absent]
        layout[f"xaxis{suffix}"].update(
            type="category",
            categoryorder="array",
            categoryarray=kinds,
            tickangle=TOKEN_ANGLE,
            automargin=True,
        )
        layout[f"yaxis{suffix}"].update(type="log", automargin=True, **_decades(traces, suffix))
    layout["yaxis"]["title"] = dict(text=y_title)
    layout.update(
        frame_layout(title, 460, top=110, bottom=40),
        barmode="group",
        annotations=marks,
        # Above the panels' titles, at the right: clear of the figure's title in the middle.
        legend=dict(orientation="h", xanchor="right", x=1, yanchor="bottom", y=1.12),
    )
    return figure(traces, layout)


def _decades(traces: list[dict], suffix: str) -> dict:
    """A log axis ticked at powers of ten only, when its bars span more than a decade
    (plotly would also label the 2s and 5s between); left to plotly otherwise."""
    values = [v for tr in traces if tr["yaxis"] == f"y{suffix}" for v in tr["y"] if v > 0]
    if values and np.log10(max(values) / min(values)) > 1:
        return dict(dtick=1, exponentformat="power")
    return {}


def timing_summary(
    seconds: Mapping[str, Mapping[str, Mapping[str, float | None]]],
    measures: Mapping[str, str],
    lengths: Sequence[str],
) -> str:
    """Per measure, every kind's time at each length ("RNN 1.2 ms / 9.8 ms"), and the kinds
    without a value."""
    parts = []
    for measure, name in measures.items():
        shown, absent = [], []
        for kind, by_length in seconds.items():
            values = [by_length[length].get(measure) for length in lengths]
            if not any(_finite(v) for v in values):
                absent.append(kind)
                continue
            times = " / ".join(duration(v) if _finite(v) else "—" for v in values)
            shown.append(f"{kind} {times}")
        text = ", ".join(shown)
        if absent:
            text += t("recurrence.trained.summary_no_step", kinds=", ".join(absent))
        parts.append(f"{name} (L = {' / '.join(lengths)}): {text}")
    return SEPARATOR.join(parts)


# --- the trained SSM on one sequence ------------------------------------------------------


def reading_figure(
    delta: np.ndarray,
    kept: np.ndarray,
    labels: Sequence[str],
    kinds: Sequence[str],
    kind_names: Mapping[str, str],
    answers: Mapping[int, str],
    titles: Sequence[str],
    title: str = "",
) -> PlainFigure:
    """Two rows under one position axis: `delta [pos]` above `kept [pos]`, a
    grey line through every position and a marker per position in its kind's style
    (`kind_names` names them in the legend); the answer slots shaded, each with its text
    from `answers` (position → text) above the first row. `labels` and `answers` escaped."""
    layout = grid_layout(2, 1, tuple(titles), shared_xaxes=True, vertical_spacing=0.1)
    x = list(labels)
    kinds = np.asarray(kinds, dtype=object)
    traces = []
    for row, values in enumerate((delta, kept), start=1):
        suffix = subplot_suffix(row, 1, 1)
        y = np.asarray(values, dtype=np.float64)
        axes = dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        line = dict(color="#b0b0b0", width=1.5)
        traces.append(
            dict(type="scatter", x=x, y=y, mode="lines", line=line, hoverinfo="skip")
            | dict(showlegend=False, **axes)
        )
        for kind, name in kind_names.items():
            where = np.flatnonzero(kinds == kind)
            traces.append(
                dict(
                    type="scatter",
                    x=[x[i] for i in where],
                    y=y[where],
                    mode="markers",
                    name=name,
                    legendgroup=kind,
                    showlegend=row == 1,
                    marker=KIND_STYLES[kind],
                    hovertemplate=f"{name}<br>%{{x}}: %{{y:.4g}}<extra></extra>",
                    **axes,
                )
            )
        layout[f"xaxis{suffix}"].update(
            type="category", categoryorder="array", categoryarray=x, automargin=True
        )
        layout[f"yaxis{suffix}"].update(
            automargin=True, rangemode="tozero" if row == 1 else "normal"
        )
    layout["xaxis2"].update(tickangle=TOKEN_ANGLE)
    slots = sorted(answers)
    shade = dict(type="rect", xref="x", y0=0, y1=1, yref="paper", line=dict(width=0))
    shapes = (
        [shade | dict(x0=slots[0] - 0.5, x1=slots[-1] + 0.5, fillcolor=ANSWER_SHADE, layer="below")]
        if slots
        else []
    )
    written = dict(y=1, xref="x", yref="y domain", showarrow=False, yanchor="bottom")
    marks = list(layout.get("annotations", [])) + [
        written | dict(x=x[slot], text=answers[slot], font=dict(size=12)) for slot in slots
    ]
    layout.update(
        frame_layout(title, 600, top=100, bottom=40),
        shapes=shapes,
        annotations=marks,
        legend=dict(xanchor="left", x=1.01, yanchor="top", y=1),
    )
    return figure(traces, layout)


def kind_means(values: np.ndarray, kinds: Sequence[str]) -> dict[str, float]:
    """The mean of `values [pos]` over the positions of each kind present, in float64."""
    values, kinds = np.asarray(values, dtype=np.float64), np.asarray(kinds, dtype=object)
    return {
        kind: float(values[kinds == kind].mean()) for kind in KIND_STYLES if (kinds == kind).any()
    }


def reading_summary(
    delta: np.ndarray, kept: np.ndarray, kinds: Sequence[str], kind_names: Mapping[str, str]
) -> str:
    """The mean Δ and the mean kept fraction at each kind of position, as drawn."""
    deltas, keeps = kind_means(delta, kinds), kind_means(kept, kinds)
    return t(
        "recurrence.trained.reading_summary",
        delta=", ".join(f"{kind_names[k]} {number(v)}" for k, v in deltas.items()),
        kept=", ".join(f"{kind_names[k]} {number(v)}" for k, v in keeps.items()),
    )


# --- the answers --------------------------------------------------------------------------


def answers_figure(
    probabilities: np.ndarray,
    vocab: Sequence[str],
    truth: Sequence[int],
    slot_names: Sequence[str],
    truth_name: str,
    title: str = "",
) -> PlainFigure:
    """The model's probabilities at each answer slot `[slot, vocab]` as a heatmap (a row per
    slot, a column per symbol, each cell's value written in it) and a ring on the symbol
    each slot should write (`truth`). `vocab` and `slot_names` come escaped."""
    z = np.asarray(probabilities, dtype=np.float64)
    rows, columns = list(slot_names), list(vocab)
    heat = dict(
        type="heatmap",
        z=z,
        x=columns,
        y=rows,
        zmin=0.0,
        zmax=1.0,
        colorscale="Blues",
        texttemplate="%{z:.2f}",
        hovertemplate="%{y} → %{x}: %{z:.4f}<extra></extra>",
        colorbar=dict(title=dict(text="p")),
    )
    ring = dict(
        type="scatter",
        x=[columns[int(i)] for i in truth],
        y=rows,
        mode="markers",
        name=truth_name,
        marker=dict(symbol="circle-open", size=30, line=dict(width=3, color=VERMILLION)),
        hovertemplate=f"{truth_name}: %{{x}}<extra></extra>",
    )
    layout = dict(
        xaxis=dict(type="category", automargin=True, side="top"),
        yaxis=dict(type="category", autorange="reversed", automargin=True),
        showlegend=True,
        legend=dict(orientation="h", xanchor="right", x=1, yanchor="top", y=-0.05),
        **frame_layout(title, 120 + 48 * len(rows), top=90, bottom=30),
    )
    return figure([heat, ring], layout)


def answers_summary(predicted: Sequence[int], truth: Sequence[int], vocab: Sequence[str]) -> str:
    """How many slots are right, and each slot's answer against its truth."""
    pairs = [(int(p), int(w)) for p, w in zip(predicted, truth, strict=True)]
    right = sum(p == w for p, w in pairs)
    return t(
        "recurrence.trained.answers_summary",
        right=right,
        n=len(pairs),
        written=" ".join(vocab[p] for p, _ in pairs),
        truth=" ".join(vocab[w] for _, w in pairs),
    )
