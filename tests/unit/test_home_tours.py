"""What the home page says a tour covers, counted from the tour's steps."""

from __future__ import annotations

import pytest

from components.i18n import using_language
from components.lineage import facts_text, lessons_text, step_lines, tour_facts
from components.tours.schema import Question, Step, Task, Tour


def _step(lesson: str, part: str, title: str, *, question: bool = False, task: bool = False):
    both = {"en": title, "zh": f"{title}（中文）"}
    return Step(
        lesson=lesson,
        part=part,
        sets={},
        title=both,
        text=both,
        quotes={},
        question=Question(both, "choice", "p", {}, {}, "", both) if question else None,
        task=Task(both, "p", {}) if task else None,
    )


def _tour(*steps: Step, minutes: int = 7) -> Tour:
    names = {"en": "A tour", "zh": "导览"}
    return Tour("t", names, names, "", minutes, tuple(steps))


def test_the_facts_count_steps_questions_tasks_and_the_lessons_in_first_visit_order():
    tour = _tour(
        _step("masks", "kv", "One", question=True),
        _step("heads", "rollout", "Two"),
        _step("masks", "cost", "Three", question=True, task=True),
        _step("recurrent", "gates", "Four", question=True),
    )
    facts = tour_facts(tour)
    assert (facts.minutes, facts.steps, facts.questions, facts.tasks) == (7, 4, 3, 1)
    assert facts.lessons == ("masks", "heads", "recurrent")
    with using_language("en"):
        assert facts_text(facts) == "7 min · 4 steps · 3 questions · 1 task"
        assert lessons_text(facts) == "Masks, step by step → Attention heads → Recurrent networks"
    with using_language("zh"):
        assert facts_text(facts) == "7 分钟 · 4 步 · 3 个问题 · 1 项任务"


@pytest.mark.parametrize(
    ("questions", "tasks", "english"),
    [(1, 0, "7 min · 2 steps · 1 question"), (2, 2, "7 min · 2 steps · 2 questions · 2 tasks")],
)
def test_one_is_said_in_the_singular_and_no_task_is_left_out(questions, tasks, english):
    steps = [
        _step("heads", "statistics", f"S{i}", question=i < questions, task=i < tasks)
        for i in range(2)
    ]
    with using_language("en"):
        assert facts_text(tour_facts(_tour(*steps))) == english


def test_each_step_is_one_numbered_line_with_the_lesson_and_part_it_opens():
    tour = _tour(_step("recurrent", "gates", "Gates"), _step("heads", "ablation", "Off"))
    with using_language("en"):
        assert step_lines(tour) == [
            "1. Gates (Recurrent networks · 5 · Gates)",
            "2. Off (Attention heads · Switch heads off)",
        ]
    with using_language("zh"):
        assert step_lines(tour)[0].startswith("1. Gates（中文）（循环神经网络 · ")
