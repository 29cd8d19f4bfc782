"""Tour files: assets/tours/<id>.json, read and checked.

A tour is a list of steps. A step opens one part of one lesson, sets controls as a link
would, and says two to four sentences; it may ask a question before the chart that answers
it is shown, and it may give a task whose check reads the live run. Every text is given in
every language; every number a text quotes is a `{placeholder}` filled by a probe.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from components.i18n import LANGUAGES, current_language
from components.lessons import LESSONS, lesson_named
from components.tours.probes import PROBES

TOURS_DIR = Path(__file__).resolve().parent.parent.parent / "assets" / "tours"
# The link keys of the tour itself: which tour, and which step (from 1).
TOUR_KEY = "tour"
STEP_KEY = "step"
QUESTION_KINDS = ("choice", "number")
_MAX_LINK_VALUE = 200


class TourError(ValueError):
    """A tour file that does not describe a tour: the file and what is wrong."""


Texts = Mapping[str, str]  # language code → text


@dataclass(frozen=True)
class Quote:
    probe: str
    params: Mapping[str, Any]
    format: str  # a format spec for numbers, as in f"{value:.2f}"; "" for texts


@dataclass(frozen=True)
class Question:
    ask: Texts
    kind: str
    probe: str
    params: Mapping[str, Any]
    options: Mapping[str, tuple[str, ...]]  # fixed options by language; empty: the probe's
    hides: str  # the chart held back until the learner answers ("" for none)
    reveal: Texts  # said after the answer; may quote `{answer}` and the step's quotes


@dataclass(frozen=True)
class Task:
    do: Texts
    check: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Step:
    lesson: str
    part: str
    sets: Mapping[str, tuple[str, ...]]  # a link's values for each control key
    title: Texts
    text: Texts
    quotes: Mapping[str, Quote]
    question: Question | None
    task: Task | None

    def link(self) -> dict[str, list[str]]:
        """The link values that open this step's part and set its controls."""
        values = {lesson_named(self.lesson).part_key: [self.part]}
        values.update({key: list(texts) for key, texts in self.sets.items()})
        return values


@dataclass(frozen=True)
class Tour:
    id: str
    title: Texts
    blurb: Texts
    lesson: str  # the lesson a lesson's own tour belongs to; "" for a tour across lessons
    minutes: int
    steps: tuple[Step, ...]


def _texts(raw, where: str) -> Texts:
    if not isinstance(raw, dict) or set(raw) != set(LANGUAGES):
        raise TourError(f"{where}: give a text in each of {sorted(LANGUAGES)}")
    for language, text in raw.items():
        if not isinstance(text, str) or not text.strip():
            raise TourError(f"{where}: the {language} text is empty")
    return MappingProxyType(dict(raw))


def say(texts: Texts, language: str | None = None) -> str:
    """A tour's text in `language` (default: the current one)."""
    return texts[language or current_language()]


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def _probe_name(raw, where: str) -> str:
    if raw not in PROBES:
        raise TourError(f"{where}: no probe is called {raw!r}")
    return raw


def _params(raw, where: str) -> Mapping[str, Any]:
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, dict):
        raise TourError(f"{where}: params must be an object")
    return MappingProxyType(dict(raw))


def _quote(raw, where: str) -> Quote:
    if not isinstance(raw, dict):
        raise TourError(f"{where}: a quote is an object with a probe")
    return Quote(
        probe=_probe_name(raw.get("probe"), where),
        params=_params(raw.get("params"), where),
        format=str(raw.get("format", "")),
    )


def _question(raw, where: str, quoted: set[str]) -> Question:
    kind = raw.get("kind")
    if kind not in QUESTION_KINDS:
        raise TourError(f"{where}: kind must be one of {QUESTION_KINDS}")
    options: dict[str, tuple[str, ...]] = {}
    if "options" in raw:
        by_language = raw["options"]
        if kind != "choice" or not isinstance(by_language, dict):
            raise TourError(f"{where}: only a choice has options, one list per language")
        if set(by_language) != set(LANGUAGES):
            raise TourError(f"{where}: give the options in each of {sorted(LANGUAGES)}")
        options = {language: tuple(map(str, texts)) for language, texts in by_language.items()}
        if len({len(texts) for texts in options.values()}) != 1 or len(options["en"]) < 2:
            raise TourError(f"{where}: the same two or more options in every language")
    question = Question(
        ask=_texts(raw.get("ask"), f"{where}.ask"),
        kind=kind,
        probe=_probe_name(raw.get("probe"), where),
        params=_params(raw.get("params"), where),
        options=MappingProxyType(options),
        hides=str(raw.get("hides", "")),
        reveal=_texts(raw.get("reveal"), f"{where}.reveal"),
    )
    for text in (*question.ask.values(), *question.reveal.values()):
        unknown = placeholders(text) - quoted - {"answer"}
        if unknown:
            raise TourError(f"{where}: no quote fills {sorted(unknown)}")
    return question


def _sets(raw, where: str, lesson: str) -> Mapping[str, tuple[str, ...]]:
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, dict):
        raise TourError(f"{where}: set must be an object of link values")
    reserved = {TOUR_KEY, STEP_KEY, lesson_named(lesson).part_key}
    values: dict[str, tuple[str, ...]] = {}
    for key, value in raw.items():
        if key in reserved:
            raise TourError(f"{where}: {key!r} is set by the tour itself")
        texts = (value,) if isinstance(value, str | int | float) else value
        if not isinstance(texts, list | tuple) or not all(
            isinstance(v, str | int | float) and len(str(v)) <= _MAX_LINK_VALUE for v in texts
        ):
            raise TourError(f"{where}: {key!r} must be a link value or a list of them")
        values[key] = tuple(str(v) for v in texts)
    return MappingProxyType(values)


def _lesson(raw, where: str) -> str:
    if raw not in {known.url_path for known in LESSONS}:
        raise TourError(f"{where}: no lesson is called {raw!r}")
    return raw


def _step(raw, where: str) -> Step:
    if not isinstance(raw, dict):
        raise TourError(f"{where}: a step is an object")
    lesson = _lesson(raw.get("lesson"), where)
    part = raw.get("part", lesson_named(lesson).parts[0])
    if part not in lesson_named(lesson).parts:
        raise TourError(f"{where}: the {lesson} lesson has no part {part!r}")
    quotes_raw = raw.get("quotes") or {}
    if not isinstance(quotes_raw, dict):
        raise TourError(f"{where}: quotes must be an object")
    quotes = {name: _quote(q, f"{where}.quotes.{name}") for name, q in quotes_raw.items()}
    text = _texts(raw.get("text"), f"{where}.text")
    for language, body in text.items():
        unknown = placeholders(body) - set(quotes)
        if unknown:
            raise TourError(f"{where}.text.{language}: no quote fills {sorted(unknown)}")
    question = raw.get("question")
    task = raw.get("task")
    return Step(
        lesson=lesson,
        part=part,
        sets=_sets(raw.get("set"), f"{where}.set", lesson),
        title=_texts(raw.get("title"), f"{where}.title"),
        text=text,
        quotes=MappingProxyType(quotes),
        question=None
        if question is None
        else _question(question, f"{where}.question", set(quotes)),
        task=None
        if task is None
        else Task(
            do=_texts(task.get("do"), f"{where}.task.do"),
            check=_probe_name(task.get("check"), f"{where}.task"),
            params=_params(task.get("params"), f"{where}.task"),
        ),
    )


def read_tour(path: Path) -> Tour:
    where = path.name
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TourError(f"{where}: not readable JSON ({error})") from None
    if not isinstance(raw, dict) or raw.get("id") != path.stem:
        raise TourError(f"{where}: its id must be its file's name, {path.stem!r}")
    steps = raw.get("steps")
    if not isinstance(steps, list) or not steps:
        raise TourError(f"{where}: a tour has steps")
    lesson = raw.get("lesson", "")
    if lesson:
        _lesson(lesson, where)
    minutes = raw.get("minutes")
    if not isinstance(minutes, int) or minutes <= 0:
        raise TourError(f"{where}: minutes must be a whole number")
    return Tour(
        id=path.stem,
        title=_texts(raw.get("title"), f"{where}.title"),
        blurb=_texts(raw.get("blurb"), f"{where}.blurb"),
        lesson=lesson,
        minutes=minutes,
        steps=tuple(_step(step, f"{where}.steps[{i}]") for i, step in enumerate(steps)),
    )


@cache
def tours() -> Mapping[str, Tour]:
    """Every tour the app ships, by id, read once per process."""
    return MappingProxyType(
        {path.stem: read_tour(path) for path in sorted(TOURS_DIR.glob("*.json"))}
    )


def tour_of_lesson(lesson: str) -> Tour | None:
    """The lesson's own tour (None for the home page, whose tours cross the lessons)."""
    if not lesson:
        return None
    return next((tour for tour in tours().values() if tour.lesson == lesson), None)
