"""The home page's comparison table: each cell is text made from one measurement of
models/analysis/lineage.py, in the current language. No st.*, no torch: measurements in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from components.i18n import t
from components.lessons import LESSONS, Lesson
from components.summaries import number

COLUMNS = ("depth", "seconds", "reach", "sees_later", "memory")
# Where each architecture is taught, in order of preference: the first lesson that exists,
# with the link parameters (the lesson's own control keys) that open the part about it.
LESSON_FOR: dict[str, tuple[tuple[str, Mapping[str, str]], ...]] = {
    # The n-gram baseline sits beside the language models of the training lab's
    # language-modelling task; the link chooses that task and opens the baseline's tab.
    "ngram": (("training", {"tr_task": "lm", "tr_part": "ngram"}),),
    "rnn": (("recurrent", {}),),
    "lstm": (("recurrent", {}),),
    "rnn_attention": (("heads", {}),),
    "encoder": (("positional", {}), ("heads", {})),
    "decoder": (("masks", {}), ("positional", {})),
}


@dataclass(frozen=True)
class LessonLink:
    lesson: Lesson
    query: Mapping[str, str] = field(default_factory=dict)


def lesson_for(architecture: str) -> LessonLink | None:
    """Where this architecture is taught (the lesson and the link's parameters), or None."""
    by_path = {lesson.url_path: lesson for lesson in LESSONS}
    for path, query in LESSON_FOR.get(architecture, ()):
        if path in by_path:
            return LessonLink(by_path[path], dict(query))
    return None


def _growth(values: Sequence[float], text) -> str:
    return " → ".join(text(v) for v in values)


def _size(value: int) -> str:
    kb = value / 1024
    if kb < 1000:
        return t("home.table.kb", kb=number(kb))
    return t("home.table.mb", mb=number(kb / 1024))


def _milliseconds(value: float) -> str:
    return t("home.table.ms", ms=number(value * 1000))


def _reach(value: float, float64: float) -> str:
    # A float32 0 is underflow where float64 still measures a gradient; 0 in both: no path.
    if value != 0:
        return number(value)
    if float64 != 0:
        return t("home.table.underflow", value=number(float64))
    return t("home.table.cannot_depend")


def _sees_later(value: float, float64: float) -> str:
    if value > 0:
        return t("home.table.yes", value=number(value))
    if float64 > 0:
        return t("home.table.yes_underflow", value=number(float64))
    return t("home.table.no")


def cells(measured) -> dict[str, str]:
    """The row of one architecture: column → text, every number from `measured`."""
    return {
        "depth": _growth(measured.depth, str),
        "seconds": _growth(measured.seconds, _milliseconds),
        "reach": _reach(measured.reach, measured.reach_float64),
        "sees_later": _sees_later(measured.sees_later, measured.sees_later_float64),
        "memory": _growth(measured.memory, _size),
    }


def headers(lengths: Sequence[int]) -> dict[str, str]:
    lengths_text = " → ".join(f"L={n}" for n in lengths)
    return {
        column: t(f"home.col.{column}", lengths=lengths_text, longest=max(lengths))
        for column in COLUMNS
    }
