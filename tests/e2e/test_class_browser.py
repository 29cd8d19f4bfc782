"""A class in Chromium: one teacher and three students, each a browser context of its own
(a session of its own), on one fresh server.

The teacher starts a class on the attention lesson; two students open the join link, one
types the code. Every change on the teacher's screen (the lesson's part, the sentence, a
control) shows on each following student's screen within FOLLOW_LIMIT_S of the teacher's
page having drawn it; a student who explores keeps their own view until "Back to the
teacher". The teacher asks a question of their own, sees the room's three answers, reveals
the answer in presenter mode, and each student's screen says whether they were right; when
the teacher ends the class, each student's screen says so.
Screenshots: tests/artifacts/class-*.png (git-ignored).
"""

from __future__ import annotations

import re
import time

import pytest
from browser_helpers import (
    FIRST_CHART_TIMEOUT_MS,
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    assert_page_healthy,
    choose,
    expect,
    screenshot,
    wait_until_drawn,
    wait_until_idle,
)

from components.i18n import t

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

SCREEN = {"width": 1400, "height": 1000}
# The projector's screenshot: tall enough for the room's panel and the lesson's first lines.
PROJECTOR_SHOT = {"width": 1400, "height": 1250}
SIDEBAR = '[data-testid="stSidebar"]'
MAIN = '[data-testid="stMain"]'
FOLLOW_LIMIT_S = 2.0
POLL_S = 0.05
# How long a latency is measured at most: longer than the limit, so a slow one is reported.
MEASURE_FOR_S = 10.0
# Each word one WordPiece token; the student's own sentence differs from both.
TEACHERS_SENTENCE = "The tired teacher opened the window"
TEACHERS_NEXT_SENTENCE = "A quiet student read the book"
STUDENTS_OWN_SENTENCE = "My cat sleeps on the warm sofa"
LAYER_CHOSEN = "2"
QUESTION = "How many heads does each layer of this model have?"
OPTIONS = ("6", "12", "384")
RIGHT = 1  # "12", 0-based
# The line under the tally's chart: "3 answers: 1. 6: 0 · 0 %; 2. 12: 2 · 67 % …".
TALLY_LINE = re.compile(r"^\d+ answers: ")

# What a student's page shows, read from its DOM (an argument each: the value awaited).
OPEN_TAB = """(name) => [...document.querySelectorAll('[role="tab"]')].some(
    tab => tab.getAttribute('aria-selected') === 'true' && tab.innerText.trim() === name)"""
SENTENCE_SHOWN = f"""(text) => {{
    const box = document.querySelector('{SENTENCE_INPUT}');
    return !!box && box.value === text;
}}"""
LAYER_SHOWN = """(value) => {
    const box = document.querySelector('.st-key-layer input[role="combobox"]');
    return !!box && box.value === value;
}"""


def _class_expander(page):
    return (
        page.locator(SIDEBAR)
        .locator('[data-testid="stExpander"]')
        .filter(has_text=t("class.heading"))
    )


def _open_class_expander(page) -> None:
    expander = _class_expander(page)
    expander.locator("summary").click()
    expect(expander.locator(".st-key-class_start")).to_be_visible()


def _start_class(page) -> str:
    """Start a class from the sidebar; the code as the teacher's panel shows it ("ACD 479")."""
    _open_class_expander(page)
    page.locator(".st-key-class_start button").click()
    code = page.locator('[data-testid="stMetricValue"]')
    expect(code).to_have_text(re.compile(r"^[A-Z0-9]{3} [A-Z0-9]{3}$"))
    wait_until_idle(page)
    return code.inner_text().strip()


def _join_by_typing(page, base_url: str, code: str) -> None:
    page.goto(f"{base_url}/")
    expect(page.get_by_role("heading", name=t("home.title"), exact=True)).to_be_visible(
        timeout=FIRST_CHART_TIMEOUT_MS
    )
    wait_until_idle(page)
    _open_class_expander(page)
    box = page.locator(".st-key-_class_code_box input")
    box.fill(code.lower())  # as a student types it: any case, a space or not
    box.press("Enter")


def _expect_following(page, code: str) -> None:
    caption = t("class.following", code=code).split(":")[0]
    expect(page.locator(MAIN).get_by_text(caption)).to_be_visible(timeout=RERUN_TIMEOUT_MS)


def _on_the_attention_lesson(page) -> None:
    expect(page.get_by_role("heading", name=t("heads.title"))).to_be_visible(
        timeout=FIRST_CHART_TIMEOUT_MS
    )
    expect(page).to_have_url(re.compile(r"/heads(\?|$)"))
    wait_until_drawn(page)


def _type_sentence(page, text: str) -> None:
    box = page.locator(SENTENCE_INPUT)
    box.fill(text)
    box.press("Enter")
    expect(box).to_have_value(text)
    wait_until_idle(page)


def _latencies(students: dict, check: str, value: str) -> dict[str, float]:
    """Seconds from now (the teacher's page idle with the change) until each student's page
    shows `value`, read every POLL_S; None for one that did not within MEASURE_FOR_S."""
    start = time.monotonic()
    waiting = dict(students)
    found: dict[str, float | None] = dict.fromkeys(students)
    while waiting and time.monotonic() - start < MEASURE_FOR_S:
        for name, page in list(waiting.items()):
            if page.evaluate(check, value):
                found[name] = round(time.monotonic() - start, 3)
                del waiting[name]
        time.sleep(POLL_S)
    return found


def _assert_followed(what: str, latencies: dict[str, float | None]) -> None:
    print(f"class follow latency, {what}: {latencies}")
    slow = {name: s for name, s in latencies.items() if s is None or s > FOLLOW_LIMIT_S}
    assert not slow, f"{what}: not shown within {FOLLOW_LIMIT_S} s: {latencies}"


def _scroll_to_top(page) -> None:
    """A click scrolls the button it clicked into view; a screenshot starts at the top."""
    page.evaluate(
        """() => [document.scrollingElement, document.querySelector('[data-testid="stMain"]')]
            .forEach(node => node && node.scrollTo(0, 0))"""
    )


def _answer(page, option: str) -> None:
    radio = page.locator(MAIN).get_by_role("radiogroup", name=t("class.your_answer"))
    expect(radio).to_be_visible(timeout=RERUN_TIMEOUT_MS)
    radio.locator("label").filter(has_text=re.compile(rf"^{re.escape(option)}$")).click()
    expect(page.locator(MAIN).get_by_text(t("class.answer_sent"))).to_be_visible()


def test_a_class_of_three_follows_the_teacher_answers_and_sees_the_verdict(
    browser, fresh_app_server
):
    base = fresh_app_server
    contexts = [browser.new_context(viewport=SCREEN) for _ in range(4)]
    try:
        for context in contexts:
            context.set_default_timeout(RERUN_TIMEOUT_MS)
        teacher, *pages = [context.new_page() for context in contexts]
        students = dict(zip(("first", "second", "typist"), pages, strict=True))

        # 1. The teacher starts a class on the attention lesson.
        teacher.goto(f"{base}/heads")
        _on_the_attention_lesson(teacher)
        shown_code = _start_class(teacher)
        code = shown_code.replace(" ", "")

        # 2. Two students open the join link, one types the code; all land on the lesson.
        for name in ("first", "second"):
            students[name].goto(f"{base}/?room={code}")
        _join_by_typing(students["typist"], base, shown_code)
        for page in students.values():
            _expect_following(page, shown_code)
            _on_the_attention_lesson(page)
            assert_page_healthy(page)
        presence = t("class.presence", members=3, following=3).replace("**", "")
        expect(teacher.get_by_text(presence)).to_be_visible(timeout=RERUN_TIMEOUT_MS)

        # 3. The part, the sentence and a control, each on every student's screen at once.
        rollout = t("heads.view.rollout")
        teacher.get_by_role("tab", name=rollout).click()
        wait_until_idle(teacher)
        _assert_followed("lesson part", _latencies(students, OPEN_TAB, rollout))

        _type_sentence(teacher, TEACHERS_SENTENCE)
        _assert_followed("sentence", _latencies(students, SENTENCE_SHOWN, TEACHERS_SENTENCE))

        choose(teacher, "layer", LAYER_CHOSEN)
        layer_box = teacher.get_by_role("combobox", name=t("heads.layer"))
        expect(layer_box).to_have_value(LAYER_CHOSEN)
        wait_until_idle(teacher)
        _assert_followed("layer", _latencies(students, LAYER_SHOWN, LAYER_CHOSEN))

        # 4. A student who explores keeps their own sentence until back with the teacher.
        explorer = students["first"]
        wait_until_idle(explorer)
        _type_sentence(explorer, STUDENTS_OWN_SENTENCE)
        back = explorer.locator(".st-key-class_back button")
        expect(back).to_be_visible()
        expect(back).to_have_text(re.compile(re.escape(t("class.back"))))

        _type_sentence(teacher, TEACHERS_NEXT_SENTENCE)
        others = {name: page for name, page in students.items() if name != "first"}
        _assert_followed(
            "sentence, two following",
            _latencies(others, SENTENCE_SHOWN, TEACHERS_NEXT_SENTENCE),
        )
        time.sleep(FOLLOW_LIMIT_S)  # the explorer's page has had as long as theirs
        expect(explorer.locator(SENTENCE_INPUT)).to_have_value(STUDENTS_OWN_SENTENCE)
        back.click()
        expect(explorer.locator(SENTENCE_INPUT)).to_have_value(TEACHERS_NEXT_SENTENCE)
        _expect_following(explorer, shown_code)

        # 5. A question of the teacher's own; two right answers, one wrong.
        teacher_sidebar = teacher.locator(SIDEBAR)
        teacher_sidebar.get_by_text(t("class.own_question")).click()
        teacher_sidebar.get_by_label(t("class.question_text")).fill(QUESTION)
        teacher_sidebar.get_by_label(t("class.question_options")).fill("\n".join(OPTIONS))
        teacher_sidebar.get_by_label(t("class.question_right")).fill(str(RIGHT + 1))
        teacher_sidebar.get_by_role("button", name=t("class.ask")).click()
        expect(teacher_sidebar.get_by_text(QUESTION)).to_be_visible()

        wrong = next(i for i in range(len(OPTIONS)) if i != RIGHT)
        picks = {"first": RIGHT, "second": RIGHT, "typist": wrong}
        for name, pick in picks.items():
            _answer(students[name], OPTIONS[pick])
        summary = teacher_sidebar.get_by_text(TALLY_LINE)
        expect(summary).to_have_text(re.compile(r"^3 answers: "), timeout=RERUN_TIMEOUT_MS)
        expect(summary).to_contain_text(f"{RIGHT + 1}. {OPTIONS[RIGHT]}: 2 · 67 %")
        expect(summary).to_contain_text(f"{wrong + 1}. {OPTIONS[wrong]}: 1 · 33 %")

        # 6. On the projector: presenter mode, toggled so the session keeps its room.
        teacher.set_viewport_size(PROJECTOR_SHOT)
        teacher.locator(".st-key-_present_toggle label").click()
        expect(teacher.locator(SIDEBAR)).to_be_hidden()
        expect(teacher.locator(MAIN).locator('[data-testid="stMetricValue"]')).to_have_text(
            shown_code
        )
        shown_summary = teacher.locator(MAIN).get_by_text(TALLY_LINE)
        expect(shown_summary).to_have_text(re.compile(r"^3 answers: "))
        wait_until_idle(teacher)
        assert_page_healthy(teacher)
        screenshot(teacher, "class-teacher-projector")

        teacher.locator(MAIN).locator(".st-key-class_reveal button").click()
        answer = OPTIONS[RIGHT]
        for name, pick in picks.items():
            page = students[name]
            if pick == RIGHT:
                verdict = page.locator('[data-testid="stAlertContentSuccess"]')
                expect(verdict).to_contain_text(t("class.right", answer=answer), timeout=5_000)
            else:
                verdict = page.locator('[data-testid="stAlertContentError"]')
                said = t("class.wrong", given=OPTIONS[pick], answer=answer)
                expect(verdict).to_contain_text(said, timeout=5_000)
            assert_page_healthy(page)
        # Two of three answers right: 67 %, marked as the right one.
        expect(shown_summary).to_contain_text(f"{RIGHT + 1}. {OPTIONS[RIGHT]}: 2 · 67 % (right)")
        for page in (teacher, *students.values()):
            _scroll_to_top(page)
        screenshot(teacher, "class-teacher-revealed")
        screenshot(students["typist"], "class-student-verdict")
        screenshot(students["first"], "class-student-right")

        # 7. Out of presenter mode, the teacher ends the class; each student is told.
        teacher.locator(".st-key-_present_toggle label").click()
        end = teacher.locator(SIDEBAR).locator(".st-key-class_end button")
        expect(end).to_be_visible()
        end.click()
        expect(teacher.locator(".st-key-class_start")).to_be_attached()
        for page in students.values():
            ended = page.locator(SIDEBAR).get_by_text(t("class.ended"))
            expect(ended).to_be_visible(timeout=5_000)
            expect(page.locator(".st-key-class_leave")).to_have_count(0)
            assert_page_healthy(page)
        screenshot(students["second"], "class-student-ended")
    finally:
        for context in contexts:
            context.close()
