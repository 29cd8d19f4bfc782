"""Every tour file the app ships, read and checked against the lessons it walks through:
each step's part exists, each text is in both languages, each probe exists and reads what
the step's part offers, each held-back chart is one the part holds back, and each answer
is computed from the live run (with nothing offered, there is no answer).

Malformed files are refused with a reason.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from components.i18n import LANGUAGES
from components.lessons import LESSONS, lesson_named
from components.tours.probes import PROBES, Live, MissingLive, Number, run_probe
from components.tours.schema import TOURS_DIR, TourError, placeholders, read_tour, tours

REPO = Path(__file__).resolve().parents[2]


def _calls_in(lesson: str, function: str) -> set[str]:
    """The names a lesson's code passes to `function` (offer, held_back) as text."""
    files = [REPO / "pages" / f"{lesson}.py", *(REPO / "components/ui/parts" / lesson).glob("*.py")]
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            first = node.args[0]
            if called == function and isinstance(first, ast.Constant):
                names.add(first.value)
    return names


def _steps():
    for tour in tours().values():
        for index, step in enumerate(tour.steps):
            yield pytest.param(tour, index, step, id=f"{tour.id}-{index + 1}")


def test_every_tour_file_is_read():
    files = sorted(TOURS_DIR.glob("*.json"))
    assert files, "the app ships tours"
    assert sorted(tours()) == [path.stem for path in files]


def test_each_lesson_has_its_tour_of_five_to_nine_steps_with_two_questions():
    for lesson in LESSONS:
        own = [tour for tour in tours().values() if tour.lesson == lesson.url_path]
        assert len(own) == 1, lesson.url_path
        steps = own[0].steps
        assert 5 <= len(steps) <= 9, (lesson.url_path, len(steps))
        assert sum(step.question is not None for step in steps) >= 2, lesson.url_path


def test_the_class_tour_crosses_the_lessons_with_six_questions():
    road = tours()["ngrams-to-gpt"]
    assert road.lesson == ""
    assert {step.lesson for step in road.steps} == {lesson.url_path for lesson in LESSONS}
    assert sum(step.question is not None for step in road.steps) >= 6


@pytest.mark.parametrize(("tour", "index", "step"), list(_steps()))
def test_a_steps_probes_read_what_its_part_offers(tour, index, step):
    offered = _calls_in(step.lesson, "offer")
    probes = [q.probe for q in step.quotes.values()]
    probes += [step.question.probe] if step.question else []
    probes += [step.task.check] if step.task else []
    for name in probes:
        missing = set(PROBES[name].reads) - offered
        assert not missing, f"{name} reads {missing}, which the {step.lesson} lesson never offers"


@pytest.mark.parametrize(("tour", "index", "step"), list(_steps()))
def test_a_question_is_answered_from_the_live_run_and_holds_back_a_chart_of_its_part(
    tour, index, step
):
    question = step.question
    if question is None:
        return
    with pytest.raises(MissingLive):
        run_probe(question.probe, Live(), question.params)
    if question.hides:
        assert question.hides in _calls_in(step.lesson, "held_back"), question.hides
    assert "{answer}" in "".join(question.reveal.values()), "the reveal says the answer"


@pytest.mark.parametrize(("tour", "index", "step"), list(_steps()))
def test_every_text_is_in_both_languages_with_the_same_quotes(tour, index, step):
    texts = [step.text, step.title]
    if step.question:
        texts += [step.question.ask, step.question.reveal]
    for by_language in texts:
        assert set(by_language) == set(LANGUAGES)
        assert len({frozenset(placeholders(text)) for text in by_language.values()}) == 1


def test_a_part_a_tour_opens_is_one_of_its_lessons_parts():
    for tour in tours().values():
        for step in tour.steps:
            assert step.part in lesson_named(step.lesson).parts


def test_a_number_answer_accepts_within_its_margin_only():
    answer = Number(200.0, relative=0.1)
    assert answer.accepts(181) and answer.accepts(220)
    assert not answer.accepts(179.9) and not answer.accepts(-200)
    assert Number(0.0, relative=0.1, absolute=0.5).accepts(0.4)


_GOOD_STEP = {
    "lesson": "heads",
    "part": "statistics",
    "title": {"en": "A", "zh": "甲"},
    "text": {"en": "Text.", "zh": "文字。"},
}


def _write(tmp_path: Path, **changes) -> Path:
    raw = {
        "id": "t",
        "minutes": 3,
        "title": {"en": "T", "zh": "导"},
        "blurb": {"en": "B", "zh": "乙"},
        "steps": [{**_GOOD_STEP, **changes}],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"part": "nowhere"}, "has no part"),
        ({"lesson": "cooking"}, "no lesson"),
        ({"text": {"en": "Only English."}}, "each of"),
        ({"text": {"en": "{n} tokens", "zh": "{n} 个"}}, "no quote fills"),
        ({"quotes": {"n": {"probe": "no.such.probe"}}}, "no probe"),
        ({"set": {"view": "ablation"}}, "set by the tour itself"),
        ({"set": {"layer": {"deep": 1}}}, "link value"),
    ],
)
def test_a_malformed_step_is_refused_with_its_reason(tmp_path, changes, reason):
    with pytest.raises(TourError, match=reason):
        read_tour(_write(tmp_path, **changes))


def test_a_file_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(TourError, match="not readable JSON"):
        read_tour(path)
