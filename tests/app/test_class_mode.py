"""Class mode through AppTest: a teacher's session and students' sessions in one process,
sharing the server's rooms as a real server's sessions do.

A page's run is what a student's page does when its pulse sees the teacher's view change
(the pulse itself, a timed fragment, is driven in the browser and load tests).
"""

from __future__ import annotations

import pytest
from conftest import APP_TIMEOUT, ROOT, messages, open_lesson
from streamlit.testing.v1 import AppTest

from components.classroom.codes import looks_like_code
from components.classroom.rooms import NotTeacher
from components.i18n import LANGUAGES, t
from components.lessons import lesson_named
from components.tours.schema import STEP_KEY, TOUR_KEY, tours
from components.ui.classroom import store
from components.ui.classroom.follow import FOLLOWING_KEY

_PLACE = "_class_place"


def _fresh(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update(query)
    return at.run()


def _teacher(language: str = "en", page: str = "heads") -> tuple[AppTest, str]:
    at = open_lesson(page, lang=language)
    at = at.button(key="class_start").click().run()
    place = at.session_state[_PLACE]
    assert place.teaching and looks_like_code(place.code)
    return at, place.code


def _student(code: str) -> AppTest:
    # Typed loosely, as a student copies it: lower case with a space in the middle.
    at = _fresh(room=f"{code[:3].lower()} {code[3:].lower()}")
    assert not at.exception, [e.value for e in at.exception]
    return at


def _shown(at: AppTest) -> str:
    return "\n".join(m.value for m in (*at.markdown, *at.caption))


def _failed(at: AppTest) -> list[str]:
    return [e.value for e in at.exception] + [m for m in messages(at) if m == t("app.error")]


@pytest.fixture(autouse=True)
def _no_wrong_code_wait(monkeypatch):
    monkeypatch.setattr(store, "WRONG_WAIT_S", 0.0)


@pytest.mark.parametrize("language", LANGUAGES)
def test_students_follow_the_teachers_lesson_sentence_language_and_controls(language):
    teacher, code = _teacher(language)
    student = _student(code)
    assert student.session_state[_PLACE].code == code
    sentence = "The river bank was muddy after the storm"
    teacher.text_input(key="sentence").set_value(sentence).run()
    teacher.selectbox(key="layer").set_value(1).run()
    student.run()
    assert not _failed(student)
    assert student.text_input(key="sentence").value == sentence
    assert student.selectbox(key="layer").value == 1
    assert student.session_state["lang"] == language
    assert t("class.following", language=language, code=" ".join((code[:3], code[3:]))) in _shown(
        student
    )
    teacher.switch_page("pages/masks.py").run()
    student.run()
    assert not _failed(student)
    assert student.text_input(key="sentence").value == sentence
    masks_part = lesson_named("masks").part_key
    assert student.session_state[masks_part] == teacher.session_state[masks_part]


def test_a_student_who_changes_a_control_stops_following_and_can_come_back():
    teacher, code = _teacher()
    student = _student(code)
    student.run()
    student.text_input(key="sentence").set_value("my own words here").run()
    assert student.session_state[FOLLOWING_KEY] is False
    assert t("class.back") in [b.label for b in student.button]
    teacher.text_input(key="sentence").set_value("the teacher moves on").run()
    student.run()
    assert student.text_input(key="sentence").value == "my own words here", "not following"
    student.button(key="class_back").click().run()
    student.run()
    assert student.text_input(key="sentence").value == "the teacher moves on"
    assert student.session_state[FOLLOWING_KEY] is True


def test_a_students_text_never_reaches_another_student():
    teacher, code = _teacher()
    first, second = _student(code), _student(code)
    first.text_input(key="sentence").set_value("a secret note from the back row").run()
    second.run()
    teacher.run()
    assert second.text_input(key="sentence").value != "a secret note from the back row"
    assert "secret note" not in _shown(teacher)


def _ask_own(teacher: AppTest, text: str, options: list[str], right: int) -> AppTest:
    teacher.text_input(key="_class_q_text").set_value(text)
    teacher.text_area(key="_class_q_options").set_value("\n".join(options))
    teacher.number_input(key="_class_q_right").set_value(right)
    return teacher.button(key="FormSubmitter:class_question-" + t("class.ask")).click().run()


def _answer(student: AppTest, option: int) -> AppTest:
    student.run()
    radio = next(r for r in student.radio if r.key and r.key.startswith("_class_answer_"))
    return radio.set_value(option).run()


def test_three_answers_are_tallied_once_each_and_the_reveal_reaches_every_student():
    teacher, code = _teacher()
    students = [_student(code) for _ in range(3)]
    teacher = _ask_own(teacher, "Which head looks back one token?", ["L0 H1", "L1 H0", "L2 H3"], 2)
    _answer(students[0], 1)
    _answer(students[1], 0)
    _answer(students[1], 1)  # changed: replaces the first answer
    _answer(students[2], 2)
    teacher.run()
    tally = store.rooms().tally(code, teacher.session_state[_PLACE].key)
    assert tally == [0, 2, 1]
    bars = [c for c in teacher.get("plotly_chart")]
    assert bars, "the tally is drawn"
    teacher.button(key="class_reveal").click().run()
    verdicts = []
    for student in students:
        student.run()
        verdicts.append((len(student.success), len(student.error)))
    assert verdicts == [(1, 0), (1, 0), (0, 1)]


def test_a_question_the_teacher_types_is_shown_as_text_and_bounded():
    teacher, code = _teacher()
    student = _student(code)
    teacher = _ask_own(teacher, "<b>bold?</b> **not** bold", ["<i>x</i>"] + ["y"] * 20, 1)
    student.run()
    question = store.rooms().question(code)
    assert len(question.options) == 8, "at most 8 options kept"
    assert "<b>" not in "".join(m.value for m in student.markdown if "bold" in m.value) or (
        "\\<b\\>" in "".join(m.value for m in student.markdown)
    )
    empty = _ask_own(teacher, "", ["only one"], 1)
    assert t("class.ask_refused") in messages(empty)


def test_wrong_codes_are_refused_and_run_out():
    at = open_lesson("heads")
    for _ in range(store.MAX_JOIN_TRIES):
        at.text_input(key="_class_code_box").set_value("ACDEFH").run()
        assert _PLACE not in at.session_state
    assert t("class.no_tries") in messages(at)
    at.text_input(key="_class_code_box").set_value("x" * 10_000).run()
    assert not _failed(at)


def test_the_teacher_key_is_in_no_link_and_in_no_students_session():
    teacher, code = _teacher()
    key = teacher.session_state[_PLACE].key
    student = _student(code)
    student.run()
    for at in (teacher, student):
        assert all(key not in str(v) for v in at.query_params.values())
    assert key not in repr({k: student.session_state[k] for k in student.session_state})
    with pytest.raises(NotTeacher):
        store.rooms().publish(code, "not-the-key", "heads", {})


def test_ending_the_class_tells_the_students_and_frees_the_room():
    teacher, code = _teacher()
    student = _student(code)
    before = store.rooms().count()
    teacher.button(key="class_end").click().run()
    assert store.rooms().count() == before - 1
    student.run()
    assert t("class.ended") in messages(student)
    assert _PLACE not in student.session_state
    student.run()
    assert not _failed(student)


def test_a_tour_steps_question_goes_to_the_room_with_the_options_and_answer_of_the_run():
    tour_id = "ngrams-to-gpt"
    index = next(i for i, s in enumerate(tours()[tour_id].steps) if s.question is not None)
    teacher = _fresh(**{TOUR_KEY: tour_id, STEP_KEY: str(index + 1)})
    teacher = teacher.button(key="class_start").click().run()
    code = teacher.session_state[_PLACE].code
    radio = next(
        w for w in (*teacher.radio, *teacher.selectbox) if w.key.startswith("tour_answer_")
    )
    teacher = teacher.button(key="class_ask_step").click().run()
    question = store.rooms().question(code)
    assert len(question.options) == len(radio.options)
    # The teacher's own check of the step's question names the right option: the room's.
    radio.set_value(0)
    teacher = teacher.button(key="tour_check").click().run()
    right_shown = bool(teacher.success)
    student = _student(code)
    _answer(student, 0)
    teacher.button(key="class_reveal").click().run()
    student.run()
    assert bool(student.success) == right_shown and bool(student.error) != right_shown


def test_the_teacher_sees_who_is_in_the_room_and_who_follows():
    teacher, code = _teacher()
    first, second = _student(code), _student(code)
    first.run()
    second.run()
    second.text_input(key="sentence").set_value("exploring on my own").run()
    second.run()  # its pulse now says it no longer follows
    teacher.run()
    assert t("class.presence", members=2, following=1) in _shown(teacher)


@pytest.mark.parametrize("language", LANGUAGES)
def test_in_presenter_mode_the_code_and_tally_are_on_the_main_screen(language):
    teacher, code = _teacher(language)
    teacher.toggle(key="_present_toggle").set_value(True).run()
    assert not _failed(teacher)
    assert [m.value for m in teacher.main.get("metric")] == [f"{code[:3]} {code[3:]}"]
    assert t("class.no_question", language=language) in _shown(teacher)


@pytest.mark.parametrize(
    "typed", ["<script>alert(1)</script>", "'; DROP TABLE rooms; --", "🙂" * 40]
)
def test_hostile_codes_join_nothing_and_break_nothing(typed):
    at = open_lesson("heads")
    at.text_input(key="_class_code_box").set_value(typed).run()
    assert _PLACE not in at.session_state and not _failed(at)
    assert t("class.no_room") in messages(at)
