"""One-line text summaries of charts, and the tables of numbers behind them.

A summary is computed from the very numbers a chart draws, in the current language:
a screen reader reads it, and a class at the back of the room can read it off the
projector when the chart's details are too small (components/ui/charts.py show_chart draws it).

No st.*, no torch, no models: arrays and labels in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.i18n import t

SEPARATOR = "; "


def number(value: float) -> str:
    """A number as a summary shows it: three significant digits, words for inf and NaN."""
    value = float(value)
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.3g}"


def _finite_points(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(y)
    return x[keep], y[keep]


# --- generic summaries --------------------------------------------------------------------


def _each_line(curves: Mapping[str, tuple[Sequence, Sequence]], describe) -> str:
    """`describe(name, xs, ys)` for each line's drawn (finite) points, joined; a line with
    none says so."""
    parts = []
    for name, (x, y) in curves.items():
        xs, ys = _finite_points(x, y)
        parts.append(describe(name, xs, ys) if ys.size else t("summary.line_empty", name=name))
    return SEPARATOR.join(parts)


def lines_summary(curves: Mapping[str, tuple[Sequence, Sequence]]) -> str:
    """Each line from its first to its last drawn point: "RNN: 0.5 at 0 → 1e-09 at 50"."""

    def first_to_last(name, xs, ys) -> str:
        return t(
            "summary.line",
            name=name,
            first=number(ys[0]),
            x0=_label(xs[0]),
            last=number(ys[-1]),
            x1=_label(xs[-1]),
        )

    return _each_line(curves, first_to_last)


def bars_summary(values: Mapping[str, float]) -> str:
    """Every bar by name, largest first: "sinusoidal 1.2; learned 0.9; none 0"."""
    ordered = sorted(values.items(), key=lambda item: _sort_key(item[1]), reverse=True)
    return SEPARATOR.join(f"{name} {number(value)}" for name, value in ordered)


def grid_summary(
    z: np.ndarray, row_labels: Sequence, col_labels: Sequence, value_name: str = ""
) -> str:
    """The largest and the smallest cell of a heatmap `z [row, column]`, by their labels."""
    z = np.asarray(z, dtype=np.float64)
    finite = np.where(np.isfinite(z), z, np.nan)
    if not np.isfinite(finite).any():
        return t("summary.no_numbers")
    high = np.unravel_index(int(np.nanargmax(finite)), z.shape)
    low = np.unravel_index(int(np.nanargmin(finite)), z.shape)
    return t(
        "summary.grid",
        name=value_name or t("chart.value"),
        high=number(z[high]),
        high_row=_label(row_labels[high[0]]),
        high_col=_label(col_labels[high[1]]),
        low=number(z[low]),
        low_row=_label(row_labels[low[0]]),
        low_col=_label(col_labels[low[1]]),
    )


def _label(value) -> str:
    if isinstance(value, (float, np.floating)):
        return number(value)
    return str(value.item() if isinstance(value, np.generic) else value)


def _sort_key(value: float) -> float:
    value = float(value)
    return -np.inf if np.isnan(value) else value


# --- attention ----------------------------------------------------------------------------


def strongest_link_summary(
    tokens: Sequence[str], link: tuple[int, int, float] | None, layer: int, head: int
) -> str:
    """ "Layer 3, head 1 — strongest: it → animal 0.64"."""
    if link is None:
        return t("summary.head_no_link", layer=layer, head=head)
    q, k, w = link
    return t(
        "summary.head_link",
        layer=layer,
        head=head,
        query=tokens[q],
        key=tokens[k],
        weight=f"{w:.2f}",
    )


def all_heads_summary(
    patterns: np.ndarray,
    tokens: Sequence[str],
    specials: Sequence[int] = (),
    sinks: Sequence[int] = (),
    n_sink: int | None = None,
) -> str:
    """The strongest link between two ordinary tokens that are not neighbours, anywhere in
    the stack (`specials`, such as [CLS], [SEP] or [UNK], are left out), then `n_sink`,
    how many heads put over half their weight on the `sinks` keys together
    (models.analysis.attention_stats sink_positions and sink_heads: the count the head
    statistics give too, so the caller counts it once for both)."""
    n_layers, n_heads, n, _ = patterns.shape
    specials = sorted({int(p) for p in specials if 0 <= p < n})
    count = n_layers * n_heads
    inner = patterns.astype(np.float64, copy=True)
    inner[..., specials] = -1.0  # keys that are special tokens
    inner[:, :, specials, :] = -1.0  # and their own rows
    # A token on itself or on a neighbour: many heads do just that, and it says little.
    near = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    inner[:, :, near] = -1.0
    # A model with no special tokens (SeqLens's trained Transformers) reads tokens, not words.
    plain = "" if specials else "_plain"
    if inner.max() < 0:
        text = t(f"summary.all_heads_sinks{plain}", count=count)
    else:
        la, h, q, k = np.unravel_index(int(np.argmax(inner)), inner.shape)
        text = t(
            f"summary.all_heads{plain}",
            count=count,
            layer=int(la),
            head=int(h),
            query=tokens[q],
            key=tokens[k],
            weight=f"{patterns[la, h, q, k]:.2f}",
        )
    sinks = tuple(int(p) for p in sinks if 0 <= p < n)
    if not sinks:
        return text
    if n_sink is None:
        raise TypeError("sinks to name need n_sink, the number of heads that are sinks on them")
    return t("summary.sentences", first=text, then=_sinks_text(tokens, sinks, n_sink, count))


def _sinks_text(tokens: Sequence[str], sinks: tuple, n_sink: int, count: int) -> str:
    first, last = tokens[sinks[0]], tokens[sinks[-1]]
    key = "summary.sinks" if len(sinks) > 1 else "summary.sinks_first"
    return t(key, n_sink=n_sink, count=count, first=first, last=last)


def token_focus_summary(
    tokens: Sequence[str], query: int, best: tuple[int, int, int, float] | None, patterns
) -> str:
    """What one token attends to: its strongest link in any head, and where its weight
    goes on average over every head."""
    mean = patterns[:, :, query, :].mean(axis=(0, 1))
    top = int(np.argmax(mean))
    average = t("summary.focus_mean", key=tokens[top], weight=f"{mean[top]:.2f}")
    if best is None:
        return t("summary.focus_none", token=tokens[query]) + SEPARATOR + average
    layer, head, key, weight = best
    strongest = t(
        "summary.focus",
        token=tokens[query],
        key=tokens[key],
        weight=f"{weight:.2f}",
        layer=layer,
        head=head,
    )
    return strongest + SEPARATOR + average


def head_statistics_summary(stats: Mapping[str, np.ndarray], titles: Mapping[str, str]) -> str:
    """Which head has the extreme value of each statistic (lowest entropy, the rest highest)."""
    parts = []
    for name, values in stats.items():
        values = np.asarray(values, dtype=np.float64)
        pick = np.nanargmin if name == "entropy" else np.nanargmax
        la, h = np.unravel_index(int(pick(values)), values.shape)
        word = t("summary.lowest" if name == "entropy" else "summary.highest")
        parts.append(
            t(
                "summary.stat",
                word=word,
                stat=titles[name],
                layer=int(la),
                head=int(h),
                value=number(values[la, h]),
            )
        )
    return SEPARATOR.join(parts)


def peaks_summary(curves: Mapping[str, tuple[Sequence, Sequence]]) -> str:
    """The largest drawn value of each line and where: "rotation: largest 1e-14 at 37"."""

    def peak(name, xs, ys) -> str:
        i = int(np.argmax(ys))
        return t("summary.peak", name=name, value=number(ys[i]), x=_label(xs[i]))

    return _each_line(curves, peak)


def values_at_summary(curves: Mapping[str, tuple[Sequence, Sequence]], at) -> str:
    """Every line's value at one x: "at 32: sinusoidal 0.31; RoPE 0.12; …"."""
    values, missing = {}, []
    for name, (x, y) in curves.items():
        hits = np.flatnonzero(np.asarray(x) == at)
        value = float(np.asarray(y, dtype=np.float64)[hits[0]]) if hits.size else np.nan
        if np.isnan(value):  # a line that ends before `at` (a learned table's last row)
            missing.append(f"{name} {t('summary.no_value')}")
        else:
            values[name] = value
    shown = [bars_summary(values)] if values else []
    return t("summary.at", x=_label(at)) + " " + SEPARATOR.join([*shown, *missing])


def medians_summary(values: Mapping[str, Sequence]) -> str:
    """The median of each named series (finite values only)."""
    medians = {}
    for name, series in values.items():
        series = np.asarray(series, dtype=np.float64)
        finite = series[np.isfinite(series)]
        medians[name] = float(np.median(finite)) if finite.size else np.nan
    return t("summary.median") + " " + bars_summary(medians)


def means_summary(values: Mapping[str, np.ndarray]) -> str:
    """The mean of each named array (finite values only)."""
    means = {}
    for name, array in values.items():
        array = np.asarray(array, dtype=np.float64)
        finite = array[np.isfinite(array)]
        means[name] = float(finite.mean()) if finite.size else np.nan
    return t("summary.mean") + " " + SEPARATOR.join(f"{n} {number(v)}" for n, v in means.items())


# --- positional encodings -------------------------------------------------------------------


def encoding_summary(table: np.ndarray, n_sentence: int) -> str:
    """A `[position, dimension]` table: its size, its range, where the sentence ends."""
    return t(
        "summary.encoding",
        positions=table.shape[0],
        dims=table.shape[1],
        low=number(np.min(table)),
        high=number(np.max(table)),
        end=n_sentence - 1,
    )


def waves_summary(table: np.ndarray, dims: Sequence[int]) -> str:
    """Each drawn dimension's range and how often it changes sign over the positions."""
    parts = []
    for dim in dims:
        column = np.asarray(table[:, dim], dtype=np.float64)
        crossings = int(np.count_nonzero(np.diff(np.signbit(column))))
        parts.append(
            t(
                "summary.wave",
                name=t("chart.dim", dim=dim),
                low=number(column.min()),
                high=number(column.max()),
                crossings=crossings,
                positions=len(column),
            )
        )
    return SEPARATOR.join(parts)


def rotation_summary(matrix: np.ndarray, k: int) -> str:
    """How many entries of M_k are non-zero, and how many lie outside its 2×2 diagonal blocks."""
    nonzero = np.abs(matrix) > 1e-12
    rows, cols = np.indices(matrix.shape)
    outside = int((nonzero & (rows // 2 != cols // 2)).sum())
    return t(
        "summary.rotation",
        k=k,
        size=matrix.shape[0],
        nonzero=int(nonzero.sum()),
        outside=outside,
    )


def diagonal_summary(scores: np.ndarray) -> str:
    """A score grid's range, and the largest spread along any of its diagonals (zero when
    scores depend only on the offset m − n)."""
    n = scores.shape[0]
    spread = max(float(np.ptp(np.diagonal(scores, offset))) for offset in range(-n + 1, n))
    return t(
        "summary.diagonal",
        low=number(scores.min()),
        high=number(scores.max()),
        spread=f"{spread:.1e}",
    )


def per_token_summary(per_token: Mapping[str, np.ndarray], tokens: Sequence[str]) -> str:
    """For each series, the token that moved most and by how much."""
    parts = []
    for name, values in per_token.items():
        values = np.asarray(values, dtype=np.float64)
        i = int(np.nanargmax(values)) if np.isfinite(values).any() else 0
        parts.append(t("summary.token_peak", name=name, token=tokens[i], value=number(values[i])))
    return SEPARATOR.join(parts)


# --- recurrent networks -----------------------------------------------------------------------


def clipping_summary(totals: Mapping[str, float], shares: Mapping[str, float], n_early: int) -> str:
    """Each bar pair: the gradient's total norm and the early steps' share of it."""
    return SEPARATOR.join(
        t(
            "summary.clip",
            name=name,
            total=number(totals[name]),
            share=number(100 * shares[name]),
            n_early=n_early,
        )
        for name in totals
    )
