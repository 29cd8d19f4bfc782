"""The room's answers to a question: one bar an option, its count and its share, and once
the teacher reveals it, the right option in colour and the others muted.

Options are what the teacher typed, so every label is escaped here; the words around them
(title, axis title, the summary's phrases) are the caller's, in the visitor's language.
Plain data in, a PlainFigure and a line of text out; no st.*.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from components.figure import PlainFigure, figure
from components.labels import escape_label
from components.palette import BLUE, GAP_RGB, GREEN
from components.summaries import SEPARATOR

# Before the reveal no bar stands out: a room that sees a favourite copies it.
NEUTRAL_COLOR = BLUE
# After it, the right option in Okabe-Ito green, the others in the grey of the attention
# maps' gaps: apart in lightness too, so a washed-out projector or a colour-blind student
# still tells them apart; the right option's label carries RIGHT_MARK as well.
RIGHT_COLOR = GREEN
MUTED_COLOR = "#{:02X}{:02X}{:02X}".format(*GAP_RGB)
RIGHT_MARK = "✓"
# An option's label on the axis, in columns (a Chinese character takes two): longer ones
# are cut, with an ellipsis, so the bars keep most of the width.
AXIS_LABEL_COLUMNS = 32
ELLIPSIS = "…"
_FONT = dict(size=16)
_BAR_TEXT_FONT = dict(size=18)


@dataclass(frozen=True)
class TallyWords:
    """The summary's words in the visitor's language, e.g. English:
    `TallyWords(line="{count} answers: {options}", right="{option} (right)",
    nobody="No answers yet")`."""

    line: str  # the whole line: formatted with count (answers in all) and options
    right: str  # the right option, once revealed: formatted with option (its part)
    nobody: str  # the line when no one has answered
    each: str = "{option}: {count}"  # one option and its count text


def share_percent(count: int, total: int) -> int:
    """`count` of `total` as a whole percentage, halves rounded up; 0 of 0 is 0."""
    if total == 0:
        return 0
    return (200 * count + total) // (2 * total)


def count_text(count: int, total: int) -> str:
    """A bar's text: "12 · 40 %"."""
    return f"{count} · {share_percent(count, total)} %"


def shortened(text: str, columns: int = AXIS_LABEL_COLUMNS) -> str:
    """`text` on one line, cut to at most `columns` display columns (the ellipsis counts
    one) where it is longer."""
    flat = " ".join(str(text).split())
    if _width(flat) <= columns:
        return flat
    kept, used = [], 0
    for char in flat:
        used += _width(char)
        if used > columns - 1:
            break
        kept.append(char)
    return "".join(kept).rstrip() + ELLIPSIS


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _checked(options: Sequence[str], counts: Sequence[int], right: int | None) -> None:
    if len(options) != len(counts):
        raise ValueError("one count an option")
    if any(count < 0 for count in counts):
        raise ValueError("a count is never negative")
    if right is not None and not 0 <= right < len(options):
        raise ValueError("the right option is not an option")


def bar_colors(n: int, right: int | None) -> list[str]:
    if right is None:
        return [NEUTRAL_COLOR] * n
    return [RIGHT_COLOR if i == right else MUTED_COLOR for i in range(n)]


def axis_labels(options: Sequence[str], right: int | None) -> list[str]:
    """Each option shortened, then escaped (so an entity is never cut), the right one
    marked."""
    labels = [escape_label(shortened(option)) for option in options]
    if right is not None:
        labels[right] = f"{RIGHT_MARK} {labels[right]}"
    return labels


def _count_step(top: int) -> int:
    """Whole-number ticks, at most about six of them."""
    return max(1, -(-top // 5))


def tally_figure(
    options: Sequence[str],
    counts: Sequence[int],
    right: int | None,
    *,
    title: str,
    count_title: str,
) -> PlainFigure:
    """A horizontal bar an option, in the order given (the first on top), as long as its
    count and labelled "count · share %". `right` is the right option's index once it is
    revealed, None before. `title` and `count_title` (the count axis) are plain text in
    the visitor's language; the title may quote the question, so both are escaped too.
    The count axis runs from 0 to the largest count (1 while no one has answered)."""
    _checked(options, counts, right)
    counts = [int(c) for c in counts]
    total, top = sum(counts), max([*counts, 1])
    positions = list(range(len(options)))
    bar = dict(
        type="bar",
        orientation="h",
        y=positions,
        x=counts,
        text=[count_text(c, total) for c in counts],
        textposition="outside",
        textfont=_BAR_TEXT_FONT,
        # A bar as long as the axis writes its text in the right margin, not over itself.
        cliponaxis=False,
        marker=dict(color=bar_colors(len(options), right)),
        hovertext=[escape_label(" ".join(str(o).split())) for o in options],
        hovertemplate="%{hovertext}<br>%{text}<extra></extra>",
    )
    layout = dict(
        title=dict(text=escape_label(title)),
        height=max(260, 70 * len(options) + 130),
        margin=dict(l=10, r=120, t=60, b=50),
        font=_FONT,
        bargap=0.25,
        showlegend=False,
        xaxis=dict(
            title=dict(text=escape_label(count_title)),
            range=[0, top],
            tick0=0,
            dtick=_count_step(top),
            fixedrange=True,
        ),
        # Positions, not the labels, place the bars: two options that read the same
        # once shortened keep a bar each.
        yaxis=dict(
            tickmode="array",
            tickvals=positions,
            ticktext=axis_labels(options, right),
            autorange="reversed",
            # Apart from the axis, where an option no one chose writes its "0 · 0 %".
            ticklabelstandoff=14,
            automargin=True,
            fixedrange=True,
        ),
    )
    return figure([bar], layout)


def tally_summary(
    options: Sequence[str], counts: Sequence[int], right: int | None, words: TallyWords
) -> str:
    """The tally in one line, options in the order given: "12 answers: Paris: 5 · 42 %
    (right); Lyon: 7 · 58 %". Plain text, options as typed: show_chart writes it literally."""
    _checked(options, counts, right)
    total = sum(int(c) for c in counts)
    if total == 0:
        return words.nobody
    parts = []
    for i, (option, count) in enumerate(zip(options, counts, strict=True)):
        text = " ".join(str(option).split())
        part = words.each.format(option=text, count=count_text(int(count), total))
        parts.append(words.right.format(option=part) if i == right else part)
    return words.line.format(count=total, options=SEPARATOR.join(parts))
