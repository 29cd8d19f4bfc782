"""The home page's text made from data, in the current language. No st.*, no torch.

- The comparison table: each cell is text made from one measurement of
  models/analysis/lineage.py (measurements in, text out).
- The road: each stage of the story and the lesson (and part) that teaches it.
- The tours: what each covers (minutes, steps, questions, tasks, the lessons it opens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from components.i18n import t
from components.lessons import LESSONS, Lesson, lesson_named
from components.summaries import number
from components.tours.schema import say

# The class tour across the lessons (assets/tours/<id>.json), offered first on the home page.
CLASS_TOUR = "ngrams-to-gpt"
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


# The road the home page tells, left to right, and the table's row each stage stands for:
# a stage's card opens that row's lesson. The n-gram has no lesson of its own; its card, like
# its row, opens the training lab's n-gram baseline. So the cards' lessons come in the menu's
# order: recurrent (RNN, LSTM), heads (attention), positional (the Transformer), masks (GPT).
STAGE_ROW: dict[str, str] = {
    "ngram": "ngram",
    "rnn": "rnn",
    "lstm": "lstm",
    "attention": "rnn_attention",
    "transformer": "encoder",
    "bert_gpt": "decoder",
}
STAGES = tuple(STAGE_ROW)


@dataclass(frozen=True)
class LessonLink:
    lesson: Lesson
    query: Mapping[str, str] = field(default_factory=dict)

    def label(self) -> str:
        """The lesson's title, and the part's when the link opens one."""
        title = t(self.lesson.title_key)
        part = self.query.get(self.lesson.part_key)
        return title if part is None else f"{title} · {t(f'{self.lesson.part_labels}.{part}')}"


def lesson_for(architecture: str) -> LessonLink | None:
    """Where this architecture is taught (the lesson and the link's parameters), or None."""
    by_path = {lesson.url_path: lesson for lesson in LESSONS}
    for path, query in LESSON_FOR.get(architecture, ()):
        if path in by_path:
            return LessonLink(by_path[path], dict(query))
    return None


def stage_link(stage: str) -> LessonLink | None:
    """Where a stage of the road is taught: the lesson of the table row it stands for."""
    return lesson_for(STAGE_ROW[stage])


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


# What a tour covers ----------------------------------------------------------------------


@dataclass(frozen=True)
class TourFacts:
    minutes: int
    steps: int
    questions: int
    tasks: int
    lessons: tuple[str, ...]  # the lessons its steps open, in the order it first opens them


def tour_facts(tour) -> TourFacts:
    """Counted from the tour's steps (a components.tours.schema.Tour)."""
    lessons: list[str] = []
    for step in tour.steps:
        if step.lesson not in lessons:
            lessons.append(step.lesson)
    return TourFacts(
        minutes=tour.minutes,
        steps=len(tour.steps),
        questions=sum(step.question is not None for step in tour.steps),
        tasks=sum(step.task is not None for step in tour.steps),
        lessons=tuple(lessons),
    )


def _count(key: str, n: int) -> str:
    return t(f"{key}.one") if n == 1 else t(f"{key}.many", n=n)


def facts_text(facts: TourFacts) -> str:
    """Minutes, steps, questions and tasks, e.g. 10 min · 7 steps · 3 questions · 1 task
    (the tasks left out when there are none)."""
    parts = [
        t("home.tour.minutes", minutes=facts.minutes),
        _count("home.tour.steps", facts.steps),
        _count("home.tour.questions", facts.questions),
    ]
    if facts.tasks:
        parts.append(_count("home.tour.tasks", facts.tasks))
    return " · ".join(parts)


def step_lines(tour) -> list[str]:
    """One line per step, numbered from 1: its title, then the lesson and part it opens."""
    lines = []
    for index, step in enumerate(tour.steps, start=1):
        lesson = lesson_named(step.lesson)
        where = LessonLink(lesson, {lesson.part_key: step.part})
        lines.append(
            t("home.tour.step_line", number=index, title=say(step.title), where=where.label())
        )
    return lines


def lessons_text(facts: TourFacts) -> str:
    """The lessons a tour opens, in its order, by their menu titles."""
    titles = {lesson.url_path: t(lesson.title_key) for lesson in LESSONS}
    return " → ".join(titles[path] for path in facts.lessons)


def tour_heading(tour) -> str:
    """The tour's title in bold and its one-sentence blurb, in the current language."""
    return t("home.tour.named", title=say(tour.title), blurb=say(tour.blurb))
