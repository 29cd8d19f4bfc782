"""The room's question: the teacher asks (a tour step's question, or one of their own), the
students answer on their own screens, the teacher's screen shows the tally and reveals the
answer, and each student's screen then says whether they were right."""

from __future__ import annotations

import contextlib
from functools import partial

import streamlit as st

from components.classroom.rooms import MAX_OPTION_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS, RoomError
from components.i18n import t
from components.labels import markdown_literal
from components.tally import TallyWords, tally_figure, tally_summary
from components.ui.charts import show_chart
from components.ui.classroom.store import Place, asked, place

_RIGHT_KEY = "_class_right"  # the teacher's: the right option of the question asked
_FORM_TEXT, _FORM_OPTIONS, _FORM_RIGHT = "_class_q_text", "_class_q_options", "_class_q_right"
_ASK_FAILED_KEY = "_class_ask_failed"  # the teacher's: a question refused, said once
_SENT_KEY = "_class_answer_sent"  # a student's: (question id, option) last sent
# A question typed by the teacher: escaped, at most twice as long, within the room's bound.
_OWN_CHARS = MAX_QUESTION_CHARS // 2


def _ask(text: str, options, right: int) -> None:
    now = place()
    try:
        asked("ask", now.code, now.key, text, list(options), right)
    except RoomError:
        st.session_state[_ASK_FAILED_KEY] = True
        return
    st.session_state[_RIGHT_KEY] = right


def offer_to_room(text: str, options: tuple[str, ...], right: int) -> None:
    """Beside a tour step's question, on the teacher's screen: send it to the room."""
    now = place()
    if now is None or not now.teaching:
        return
    st.button(
        t("class.ask_step"),
        key="class_ask_step",
        icon="📣",
        on_click=_ask,
        args=(text, options, right),
    )


def _ask_own() -> None:
    """The quick question form's submit: a question of the teacher's own, checked."""
    text = markdown_literal(str(st.session_state.get(_FORM_TEXT) or "").strip()[:_OWN_CHARS])
    lines = str(st.session_state.get(_FORM_OPTIONS) or "").splitlines()
    options = [o.strip()[:MAX_OPTION_CHARS] for o in lines if o.strip()][:MAX_OPTIONS]
    right = int(st.session_state.get(_FORM_RIGHT) or 1) - 1
    if not text or len(options) < 2 or not 0 <= right < len(options):
        st.session_state[_ASK_FAILED_KEY] = True
        return
    _ask(text, options, right)


def quick_question_form() -> None:
    with st.expander(t("class.own_question")), st.form("class_question", border=False):
        st.text_input(t("class.question_text"), key=_FORM_TEXT, max_chars=_OWN_CHARS)
        st.text_area(
            t("class.question_options"),
            key=_FORM_OPTIONS,
            max_chars=MAX_OPTIONS * (MAX_OPTION_CHARS + 1),
            height=120,
        )
        st.number_input(
            t("class.question_right"), min_value=1, max_value=MAX_OPTIONS, key=_FORM_RIGHT
        )
        st.form_submit_button(t("class.ask"), on_click=_ask_own, type="primary")
    if st.session_state.pop(_ASK_FAILED_KEY, False):
        st.warning(t("class.ask_refused"))


def _reveal() -> None:
    now = place()
    # Refused or unreachable: the tally says what the room holds at its next run.
    with contextlib.suppress(RoomError):
        asked("reveal", now.code, now.key, st.session_state.get(_RIGHT_KEY))


def _shown_options(options) -> list[str]:
    """Numbered, as the teacher names the right one in the form."""
    return [f"{i + 1}. {o}" for i, o in enumerate(options)]


def tally_for_teacher(now: Place) -> None:
    """The question asked, the room's answers as bars, and the reveal button."""
    question = asked("question", now.code)
    if question is None:
        st.caption(t("class.no_question"))
        return
    counts = asked("tally", now.code, now.key)
    st.markdown("**" + question.text + "**")
    right = question.right if question.revealed else None
    labels = _shown_options(question.options)
    words = TallyWords(
        line=t("class.tally_line"),
        right=t("class.tally_right"),
        nobody=t("class.tally_nobody"),
        each=t("class.tally_each"),
    )
    show_chart(
        tally_figure(
            labels, counts, right, title=t("class.tally_title"), count_title=t("class.tally_axis")
        ),
        key="class_tally",
        summary=tally_summary(labels, counts, right, words),
    )
    if not question.revealed:
        st.button(t("class.reveal"), key="class_reveal", on_click=_reveal, type="primary")


def _send(now: Place, question_id: int, key: str) -> None:
    option = st.session_state.get(key)
    if option is None:
        return
    try:
        asked("answer", now.code, now.member, question_id, option)
    except RoomError:
        st.session_state[_SENT_KEY] = None
        return
    st.session_state[_SENT_KEY] = (question_id, option)


def _escaped_option(options: tuple[str, ...], index: int) -> str:
    # A function of this module, not a closure: the session keeps a control's format_func.
    return markdown_literal(options[index])


def answer_as_student(now: Place) -> None:
    """The room's question on a student's screen: answer (again) until the reveal, then
    whether the answer was right."""
    question = asked("question", now.code)
    if question is None:
        return
    options = question.options
    st.markdown("**" + question.text + "**")
    key = f"_class_answer_{question.id}"
    sent = st.session_state.get(_SENT_KEY)
    mine = sent[1] if sent and sent[0] == question.id else None
    st.radio(
        t("class.your_answer"),
        range(len(options)),
        index=None,  # then the radio keeps the student's choice itself, run after run
        key=key,
        format_func=partial(_escaped_option, options),
        disabled=question.revealed,
        on_change=_send,
        args=(now, question.id, key),
    )
    if not question.revealed:
        st.caption(t("class.answer_sent") if mine is not None else t("class.answer_hint"))
        return
    answer = markdown_literal(options[question.right])
    if mine is None:
        st.info(t("class.unanswered", answer=answer))
    elif mine == question.right:
        st.success(t("class.right", answer=answer), icon="✅")
    else:
        st.error(t("class.wrong", given=markdown_literal(options[mine]), answer=answer), icon="❌")
