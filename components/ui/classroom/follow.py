"""Students follow the teacher's screen: what the teacher's page shows goes to the room, and
a following student's page takes it, as a tour step or a link would set it.

The teacher's page publishes what it shows (`shown_view`: the lesson, language, sentence,
tour step, part and controls; not presenter mode) at the end of each run in which it
changed. A following student's page checks the room every PULSE_S
(components/ui/classroom/panel.py) and, when the view is new, reruns: before anything is
drawn, `take_teachers_view` sets the language and the sentence, hands the part and the
controls their values (components/ui/linked.py) and marks the tour step as set, so the
step's own values do not overwrite the teacher's; `switch_to_teachers_page` then opens the
teacher's lesson if it is another.

A student who changes anything the view holds (a control, the sentence, the language, a
tour step, the lesson) stops following: `after_lesson` compares what the student's page
shows at the end of each run with what the run before left.
"""

from __future__ import annotations

import streamlit as st

from components.classroom.rooms import RoomError, RoomGone
from components.i18n import current_language, normalise_language
from components.lessons import lesson_named
from components.tours.schema import STEP_KEY, TOUR_KEY
from components.ui.classroom.store import Unreachable, asked, leave, place
from components.ui.inputs import LANGUAGE_KEY, PRESENT_KEY, ROOM_KEY
from components.ui.linked import drawn_controls, hand_over_link_values
from components.ui.sentence import SENTENCE_KEY, default_sentence, raw_sentence
from components.ui.tour import mark_step_set

# Link keys the frame sets itself; every other key is a part's or a control's.
_FRAME_KEYS = (LANGUAGE_KEY, SENTENCE_KEY, TOUR_KEY, STEP_KEY)
FOLLOWING_KEY = "_class_following"
APPLIED_KEY = "_class_view_applied"
# The view taken in a run that has not ended yet: applied once the run has drawn it. A run
# cut short (a newer request took its place) leaves it unapplied, so the student's pulse
# asks for the page again instead of leaving it half drawn.
_TAKING_KEY = "_class_view_taking"
_SEEN_KEY = "_class_link_seen"
_PUBLISHED_KEY = "_class_published"
_ENDED_KEY = "_class_ended"
_DRAWN_KEY = "_class_drawn"  # a student's: the linked controls their last run drew


def shown_view(page_path: str) -> tuple[str, dict[str, list[str]]]:
    """What this page shows, as a link would say it: the lesson, the language, the sentence,
    the tour step, and every linked control not at its default. Read from the run itself,
    not from the address bar (which Streamlit learns only with the next run)."""
    params = {LANGUAGE_KEY: [current_language()], SENTENCE_KEY: [raw_sentence()]}
    for key in (TOUR_KEY, STEP_KEY):
        if key in st.query_params:
            params[key] = st.query_params.get_all(key)
    params.update({key: texts for key, texts in drawn_controls().items() if texts})
    return page_path, params


def following() -> bool:
    now = place()
    return now is not None and not now.teaching and st.session_state.get(FOLLOWING_KEY, True)


def follow_again() -> None:
    """The "back to the teacher" button's on_click."""
    st.session_state[FOLLOWING_KEY] = True
    st.session_state.pop(APPLIED_KEY, None)


def room_ended() -> bool:
    """Whether the room this session was in has ended (said once, then forgotten)."""
    return bool(st.session_state.pop(_ENDED_KEY, False))


def lost_room() -> None:
    st.session_state[_ENDED_KEY] = True
    leave()


def _take_language_and_sentence(params: dict[str, list[str]]) -> None:
    raws = params.get(LANGUAGE_KEY)
    language = normalise_language(raws[-1] if raws else None)
    st.session_state[LANGUAGE_KEY] = language
    sentence = params.get(SENTENCE_KEY)
    st.session_state[SENTENCE_KEY] = sentence[-1] if sentence else default_sentence(language)


def _take_tour_step(params: dict[str, list[str]]) -> None:
    tour, step = params.get(TOUR_KEY), params.get(STEP_KEY)
    if tour and step:
        st.query_params[TOUR_KEY], st.query_params[STEP_KEY] = tour[-1], step[-1]
        mark_step_set(tour[-1], step[-1])
        return
    for key in (TOUR_KEY, STEP_KEY):
        if key in st.query_params:
            del st.query_params[key]
    mark_step_set(None, None)


def _take_controls(params: dict[str, list[str]]) -> None:
    """The teacher's parts and controls; a control of the student's last run that the
    teacher has at its default goes back to its default here too."""
    theirs = {k: v for k, v in params.items() if k not in _FRAME_KEYS}
    mine = [k for k in st.session_state.get(_DRAWN_KEY, ()) if k not in theirs]
    hand_over_link_values({**dict.fromkeys(mine, []), **theirs})


def take_teachers_view() -> str | None:
    """Before the frame draws: the teacher's view, when a following student has not taken
    its latest yet. Returns the teacher's page (its url path) when one was taken."""
    if not following():
        return None
    now = place()
    try:
        view = asked("view", now.code)
    except RoomGone:
        lost_room()
        return None
    except Unreachable:
        return None
    if view.version == 0 or st.session_state.get(APPLIED_KEY) == view.version:
        return None
    _take_language_and_sentence(view.params)
    _take_tour_step(view.params)
    _take_controls(view.params)
    st.session_state[_TAKING_KEY] = view.version
    st.session_state.pop(_SEEN_KEY, None)
    return view.page


def switch_to_teachers_page(teachers_page: str | None, page) -> None:
    """Once the menu is known: open the teacher's lesson, when this run is on another."""
    if teachers_page is None or teachers_page == page.url_path:
        return
    try:
        target = lesson_named(teachers_page).file
    except KeyError:  # the home page, which is no lesson
        target = "pages/home.py"
    # The parameters no control is bound to; the sentence and the controls keep what the
    # session holds for them (taken above) across the switch, as a tour step's do.
    carried = (TOUR_KEY, STEP_KEY, PRESENT_KEY, ROOM_KEY)
    query = {k: st.query_params.get_all(k) for k in carried if k in st.query_params}
    query[LANGUAGE_KEY] = [st.session_state.get(LANGUAGE_KEY) or current_language()]
    st.switch_page(target, query_params=query)


def _publish(page_path: str) -> None:
    now = place()
    shown = shown_view(page_path)
    if st.session_state.get(_PUBLISHED_KEY) == shown:
        return
    try:
        asked("publish", now.code, now.key, *shown)
    except RoomGone:
        lost_room()
        return
    except RoomError:
        return  # unreachable or refused: published at the next run that can
    st.session_state[_PUBLISHED_KEY] = shown


def shown_taken_view() -> None:
    """The view this run took counts as shown: the run drew it, or failed (another run
    would fail again)."""
    taken = st.session_state.pop(_TAKING_KEY, None)
    if taken is not None:
        st.session_state[APPLIED_KEY] = taken


def after_lesson(page_path: str) -> None:
    """After the lesson ran to its end: the teacher's view goes to the room; a student's
    page has shown the view it took; a student who changed anything since the last run
    stops following."""
    now = place()
    if now is None:
        return
    if now.teaching:
        _publish(page_path)
        return
    st.session_state[_DRAWN_KEY] = tuple(drawn_controls())
    if not following():
        return
    shown_taken_view()
    seen = shown_view(page_path)
    before = st.session_state.get(_SEEN_KEY)
    if before is not None and before != seen:
        st.session_state[FOLLOWING_KEY] = False
    st.session_state[_SEEN_KEY] = seen
