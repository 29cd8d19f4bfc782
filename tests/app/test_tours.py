"""Every tour the app ships, walked as a learner walks it: from its first step to its last,
in both languages, on the default sentence and on two others.

At each step: no failure; the step's part is the open one; its controls took the values its
link sets (no note that a link value was refused); before an answer, the chart that holds it
is held back and no verdict or answer is on the page; a wrong answer is marked wrong and a
right one right (the right one read from what the app revealed after the wrong one); a
quoted number follows the sentence; the step's link, opened afresh, lands on the same step.
"""

from __future__ import annotations

import re

import pytest
from conftest import APP_TIMEOUT, ROOT, messages
from streamlit.testing.v1 import AppTest

from components.i18n import LANGUAGES, strings, t
from components.lessons import lesson_named
from components.tours.schema import STEP_KEY, TOUR_KEY, say, tours
from components.ui.parts import part_label

OTHER_SENTENCES = (
    "My cat sat on the warm laptop because it was tired",
    "我的猫坐在温暖的笔记本电脑上，因为它累了",
)
# The fixed start of each note that says a link's value was refused or changed.
_LINK_NOTES = ("note.link_not_a_choice", "note.link_not_a_number", "note.link_clamped")


def _note_starts(language: str) -> list[str]:
    return [strings(language)[key].split("{")[0].split("(")[0].strip() for key in _LINK_NOTES]


def _panel_text(at: AppTest) -> str:
    where = at.main if at.query_params.get("present") else at.sidebar
    return "\n".join(m.value for m in where.markdown)


def _failed(at: AppTest) -> list[str]:
    shown = [e.value for e in at.exception]
    return shown + [m for m in messages(at) if m in (t("app.error"), t("tour.failed"))]


def _open(tour_id: str, step: int, language: str, **query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({"lang": language, TOUR_KEY: tour_id, STEP_KEY: str(step), **query})
    return at.run()


def _link_value(at: AppTest, key: str) -> str:
    value = at.query_params[key]
    return value[-1] if isinstance(value, list) else value


def _verdicts(at: AppTest) -> tuple[list[str], list[str]]:
    return [s.value for s in at.success], [e.value for e in at.error]


def _choice(at: AppTest, key: str):
    """A choice's control: buttons for a few options, a list for many."""
    return next(w for w in (*at.radio, *at.selectbox) if w.key == key)


def _answer(at: AppTest, key: str, kind: str, value) -> AppTest:
    widget = _choice(at, key) if kind == "choice" else at.number_input(key=key)
    widget.set_value(value)
    return at.button(key="tour_check").click().run()


def _answers_in_turn(at: AppTest, tour_id: str, index: int, language: str) -> AppTest:
    """Answer wrongly (or as wrongly as the options allow), then rightly."""
    question = tours()[tour_id].steps[index].question
    key = f"tour_answer_{tour_id}_{index}"
    with_language = {"language": language}
    assert t("tour.check", **with_language) in [b.label for b in at.button]
    if question.hides:
        assert t("tour.answer_first", **with_language) in messages(at), "the chart waits"
    reveal_start = say(question.reveal, language).split("{")[0].strip()
    page = "\n".join(m.value for m in at.markdown)
    assert not reveal_start or reveal_start not in page, "no answer before the learner's"
    assert not any(_verdicts(at)), "no verdict before an answer"

    first = 0 if question.kind == "choice" else 987654.0
    options = _choice(at, key).options if question.kind == "choice" else []
    at = _answer(at, key, question.kind, first)
    right, wrong = _verdicts(at)
    assert len(right) + len(wrong) == 1, (right, wrong)
    shown = "\n".join(m.value for m in at.markdown)
    # The revealed answer, as the reveal sentence quotes it.
    pattern = re.escape(say(question.reveal, language)).replace(r"\{answer\}", "(?P<answer>.+?)")
    pattern = re.sub(r"\\\{[a-z_]+\\\}", ".+?", pattern)
    found = re.search(pattern, shown, flags=re.S)
    assert found, (pattern, shown)
    answer = found.group("answer")
    if question.kind == "choice":
        assert (options[0] == answer) == bool(right), (options[0], answer, right)
        assert answer in options
        if question.hides:
            assert t("tour.answer_first", **with_language) not in messages(at), "chart shown"
        at = at.button(key="tour_ask_again").click().run()
        at = _answer(at, key, "choice", options.index(answer))
    else:
        assert wrong, "987654 is far from every answer the lessons ask for"
        at = at.button(key="tour_ask_again").click().run()
        at = _answer(at, key, "number", float(answer))
    right, wrong = _verdicts(at)
    assert right and not wrong, (right, wrong)
    return at


def _walks():
    for tour_id in tours():
        for language in LANGUAGES:
            yield pytest.param(tour_id, language, id=f"{tour_id}-{language}")


@pytest.mark.parametrize(("tour_id", "language"), list(_walks()))
def test_a_tour_walked_from_first_to_last_step(tour_id, language):
    tour = tours()[tour_id]
    at = _open(tour_id, 1, language)
    refused = _note_starts(language)
    texts_by_sentence: list[set[str]] = []
    for index, step in enumerate(tour.steps):
        assert not _failed(at), (index, _failed(at))
        assert _link_value(at, STEP_KEY) == str(index + 1)
        lesson = lesson_named(step.lesson)
        shown_part = at.session_state[lesson.part_key]
        with_language = {"language": language}
        assert shown_part == t(f"{lesson.part_labels}.{step.part}", **with_language) or (
            shown_part == part_label(lesson.part_labels, step.part)
        ), (step.part, shown_part)
        assert not [m for m in messages(at) if any(m.startswith(n) for n in refused)]
        assert f"{index + 1}. {say(step.title, language)}" in _panel_text(at)

        default = at.text_input(key="sentence").value
        seen = set()
        for sentence in (*OTHER_SENTENCES, default):
            at.text_input(key="sentence").set_value(sentence).run()
            assert not _failed(at), (index, sentence, _failed(at))
            seen.add(_panel_text(at))
        texts_by_sentence.append(seen)
        if step.question is not None:
            at = _answers_in_turn(at, tour_id, index, language)
        if index + 1 < len(tour.steps):
            at = at.button(key="tour_next").click().run()
    assert any(len(seen) > 1 for seen in texts_by_sentence), (
        "some step quotes a number of the live run, which follows the sentence"
    )
    at.button(key="tour_next").click().run()  # the last step's Finish leaves the tour
    assert TOUR_KEY not in at.query_params and not _failed(at)


@pytest.mark.parametrize("tour_id", list(tours()))
def test_a_steps_link_opened_afresh_lands_on_that_step(tour_id):
    tour = tours()[tour_id]
    middle = len(tour.steps) // 2
    walked = _open(tour_id, 1, "en")
    for _ in range(middle):
        walked = walked.button(key="tour_next").click().run()
    link = {key: walked.query_params[key] for key in walked.query_params}
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    for key, values in link.items():
        fresh.query_params[key] = values
    fresh.run()
    assert not _failed(fresh)
    assert f"{middle + 1}. {say(tour.steps[middle].title, 'en')}" in _panel_text(fresh)
    step = tour.steps[middle]
    part_key = lesson_named(step.lesson).part_key
    assert fresh.session_state[part_key] == walked.session_state[part_key]
    for key in step.sets:
        assert fresh.session_state[key] == walked.session_state[key], key


@pytest.mark.parametrize("language", LANGUAGES)
def test_checking_with_no_answer_chosen_asks_for_one_and_gives_no_verdict(language):
    tour_id = "ngrams-to-gpt"
    index = next(i for i, s in enumerate(tours()[tour_id].steps) if s.question is not None)
    at = _open(tour_id, index + 1, language)
    at = at.button(key="tour_check").click().run()
    assert not _failed(at)
    assert not any(_verdicts(at)), "nothing was chosen: nothing to judge"
    assert t("tour.choose_first", language=language) in [w.value for w in at.warning]
    at = at.text_input(key="sentence").set_value(OTHER_SENTENCES[0]).run()
    assert t("tour.choose_first", language=language) not in [w.value for w in at.warning]
