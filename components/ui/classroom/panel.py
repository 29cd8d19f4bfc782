"""The class's panels: joining or starting a class, the teacher's room (code, join link, QR
code, who follows, the question's tally) and a student's (following or not, the question).

The live parts are fragments that rerun on their own: a student's every PULSE_S (it reruns
the whole page when the teacher's view changed and the student follows), the teacher's every
TEACHER_PULSE_S. Everything else is drawn with the page's run.
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import streamlit as st

from components.classroom.codes import LENGTH, spaced
from components.classroom.qr import join_qr_svg
from components.classroom.rooms import RoomError, RoomFull, RoomGone
from components.i18n import set_language, t
from components.ui.classroom import follow, store
from components.ui.classroom.questions import (
    answer_as_student,
    quick_question_form,
    tally_for_teacher,
)
from components.ui.inputs import LANGUAGE_KEY, ROOM_KEY

PULSE_S = 0.5
TEACHER_PULSE_S = 1.0
_CODE_BOX = "_class_code_box"
# Whether the student's fragment is being drawn by the page's run, not by its own timer.
_in_page_run = threading.local()

_NOTE_KEY = "_class_note"
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")
_ROOM_BOX = "class_room"
# Presenter mode stacks every row that holds a chart (assets/styles/presenter.css: one
# chart per screen). The teacher's room is the one row kept side by side on a wide screen,
# so the projector shows the code and QR code beside the room's live tally.
_ASSETS = Path(__file__).resolve().parent.parent.parent.parent / "assets"
_CODE_BESIDE_TALLY_CSS = _ASSETS / "styles" / "class_room.css"


def join_link(code: str) -> str:
    """The link students open: this server's address as the teacher's browser reached it."""
    parts = urlsplit(str(st.context.url or ""))
    base = f"{parts.scheme or 'http'}://{parts.netloc or 'localhost:8501'}"
    return f"{base}/?{urlencode({ROOM_KEY: code})}"


def _on_this_machine_only(link: str) -> bool:
    return (urlsplit(link).hostname or "") in _LOCAL_HOSTS


def _start() -> None:
    try:
        store.start_class()
    except RoomFull:
        st.session_state[_NOTE_KEY] = "class.rooms_full"
    except RoomError:
        st.session_state[_NOTE_KEY] = "class.unreachable"


def _join_typed() -> None:
    typed = str(st.session_state.get(_CODE_BOX) or "")
    st.session_state[_CODE_BOX] = ""
    if typed.strip():
        _join(typed)


def _join(typed: str) -> None:
    try:
        joined = store.join(typed)
    except RoomFull:
        st.session_state[_NOTE_KEY] = "class.room_full"
        return
    except RoomError:
        st.session_state[_NOTE_KEY] = "class.unreachable"
        return
    if joined:
        follow.follow_again()
        st.query_params[ROOM_KEY] = store.place().code
    else:
        st.session_state[_NOTE_KEY] = "class.no_room"


def join_from_link() -> None:
    """A join link's first run: the room it names, joined once."""
    raw = st.query_params.get(ROOM_KEY)
    if raw is None or store.place() is not None:
        return
    del st.query_params[ROOM_KEY]
    _join(raw)


def _pending_note() -> str | None:
    """What the join box has to say (said once): a refusal, or that the class has ended."""
    key = st.session_state.pop(_NOTE_KEY, None)
    if follow.room_ended():
        key = "class.ended"
    if key == "class.no_room" and store.tries_left() <= 0:
        key = "class.no_tries"
    return key


def join_box(where) -> None:
    """Not in a class: a code to join with, or a class to start."""
    note = _pending_note()
    # Open when it has something to say: a student whose class has just ended sees why
    # their panel went away.
    with where.expander(t("class.heading"), icon="👩‍🏫", expanded=note is not None):
        if note is not None:
            st.warning(t(note), icon="👩‍🏫")
        st.text_input(
            t("class.code_label"),
            key=_CODE_BOX,
            max_chars=4 * LENGTH,
            placeholder="ACD 479",
            on_change=_join_typed,
        )
        st.button(t("class.start"), key="class_start", icon="🎓", on_click=_start)
        st.caption(t("class.start_help"))


@st.fragment(run_every=TEACHER_PULSE_S)
def _room_now() -> None:
    set_language(st.session_state.get(LANGUAGE_KEY))
    now = store.place()
    if now is None or not now.teaching:
        return
    try:
        presence = store.asked("presence", now.code, now.key)
        st.markdown(t("class.presence", members=presence.members, following=presence.following))
        tally_for_teacher(now)
    except RoomGone:
        follow.lost_room()
        st.rerun(scope="app")
    except RoomError:
        st.warning(t("class.unreachable"))


def teacher_panel(where, presenting: bool) -> None:
    now = store.place()
    link = join_link(now.code)
    box = where.container(border=True, key=_ROOM_BOX)
    if presenting:
        box.html(_CODE_BESIDE_TALLY_CSS)
    code_side, live_side = box.columns([1, 2]) if presenting else (box, box)
    code_side.metric(t("class.code_shown"), spaced(now.code))
    code_side.image(join_qr_svg(link), width=260 if presenting else 160)
    code_side.code(link, language=None, wrap_lines=True)
    if _on_this_machine_only(link):
        code_side.warning(t("class.local_link"))
    with live_side:
        _room_now()
        if not presenting:
            quick_question_form()
    if not presenting:
        box.button(t("class.end"), key="class_end", icon="⏹", on_click=store.end_class)


@st.fragment(run_every=PULSE_S)
def _student_now() -> None:
    set_language(st.session_state.get(LANGUAGE_KEY))
    now = store.place()
    if now is None or now.teaching:
        return
    following = follow.following()
    try:
        pulse = store.asked("pulse", now.code, now.member, following)
    except RoomGone:
        follow.lost_room()
        st.rerun(scope="app")
    except RoomError:
        st.caption(t("class.unreachable"))
        return
    # On its own timer (not inside the page's run, which draws the view it took): a view
    # newer than the page shows, or one a run took but was cut short before drawing.
    shown = (0, st.session_state.get(follow.APPLIED_KEY))
    if following and not getattr(_in_page_run, "now", False) and pulse.view_version not in shown:
        st.rerun(scope="app")
    if following:
        st.caption(t("class.following", code=spaced(now.code)))
    else:
        st.button(
            t("class.back"),
            key="class_back",
            icon="↩️",
            on_click=follow.follow_again,
            type="primary",
        )
    answer_as_student(now)


def student_panel(where) -> None:
    with where.container(border=True):
        _student_now()
        st.button(t("class.leave"), key="class_leave", on_click=store.leave, type="tertiary")


def class_panel(presenting: bool):
    """Where the class's panel of this session goes (the teacher's, a student's, or the join
    box), reserved here, above the lesson, and filled after it (`fill_class_panel`): a
    student who changed something in this run is then shown as no longer following. Only a
    panel for the main area takes a place there."""
    now = store.place()
    if now is None or (now.teaching and not presenting):
        return st.sidebar.container(), presenting
    return st.container(), presenting


def fill_class_panel(reserved) -> None:
    where, presenting = reserved
    now = store.place()
    if now is None:
        join_box(where)
    elif now.teaching:
        teacher_panel(where, presenting)
    else:
        _in_page_run.now = True
        try:
            student_panel(where)
        finally:
            _in_page_run.now = False
