"""The tour on screen: the step's text beside the live charts, its question, its task.

The frame reads the tour and the step from the link before the lesson runs (`begin_tour`):
a step opens its part and sets its controls as a link would, once, when the learner comes
to it; from then on the controls are the learner's. While the lesson runs, the open part
offers the numbers its charts draw (`offer`) and asks whether a chart waits for the
learner's answer (`held_back`). After the lesson, the frame fills the tour's panel
(`finish_tour`, components/ui/tour_panel.py) from those offers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from components.i18n import t
from components.lessons import lesson_named
from components.tours.probes import Live
from components.tours.schema import STEP_KEY, TOUR_KEY, Tour, say, tour_of_lesson, tours
from components.ui.inputs import LANGUAGE_KEY, PRESENT_KEY, ROOM_KEY, parse_number
from components.ui.linked import forget_handed_over, hand_over_link_values
from components.ui.sentence import SENTENCE_KEY, show_notes
from models.text import Note

# Link keys the frame keeps in the address bar itself (the sentence's box writes its own):
# a step's link carries them on.
_FRAME_KEYS = (LANGUAGE_KEY, PRESENT_KEY, ROOM_KEY)
# The step whose controls were last set: (tour id, step index). A rerun of the same step
# keeps what the learner changed since; a new step, or a new session, sets them again.
_APPLIED_KEY = "_tour_applied"
# Where the learner asked to go: set by a button's callback, followed in the next run.
_GOTO_KEY = "_tour_goto"
ANSWERS_KEY = "_tour_answers"


@dataclass
class _TourRun:
    tour: Tour | None = None
    index: int = 0
    offers: dict[str, dict[str, Any]] = field(default_factory=dict)


_now = threading.local()  # each script run has its own thread


def _this_run() -> _TourRun:
    run = getattr(_now, "run", None)
    if run is None:
        run = _now.run = _TourRun()
    return run


def offer(name: str, **values: Any) -> None:
    """What an open part's charts draw, for the tour step's quotes, answers and checks.
    Cheap: it keeps references to what the part computed anyway, for this run only."""
    _this_run().offers[name] = values


def live_offers() -> Live:
    return Live(_this_run().offers)


def active() -> tuple[Tour, int] | None:
    run = _this_run()
    return None if run.tour is None else (run.tour, run.index)


def answer_given(tour: Tour, index: int) -> dict | None:
    """The learner's answer to a step's question in this session, with its verdict."""
    return st.session_state.get(ANSWERS_KEY, {}).get((tour.id, index))


def held_back(chart: str) -> bool:
    """Whether `chart` waits for the learner's answer to the current step's question:
    a part then draws a note instead, and nothing of the chart reaches the browser."""
    run = _this_run()
    if run.tour is None:
        return False
    question = run.tour.steps[run.index].question
    return (
        question is not None
        and question.hides == chart
        and answer_given(run.tour, run.index) is None
    )


def show_held_back() -> None:
    st.info(t("tour.answer_first"), icon="🤔")


# --- following the link ----------------------------------------------------------------


def step_link(tour: Tour, index: int, controls: bool = True) -> dict[str, str | list[str]]:
    """The query of a step's link: the frame's settings and the sentence as the address bar
    has them, the tour, the step (from 1) and, with `controls`, the step's part and controls.

    Within a lesson, controls are bound to the address bar, which Streamlit then does not let
    anyone else write: a step reached by Next hands its values to the controls instead (and
    they write them to the address bar), so its switch of page carries only the rest."""
    kept = (*_FRAME_KEYS, SENTENCE_KEY) if controls else _FRAME_KEYS
    query: dict[str, str | list[str]] = {
        key: st.query_params.get_all(key) for key in kept if key in st.query_params
    }
    query.update({TOUR_KEY: tour.id, STEP_KEY: str(index + 1)})
    if controls:
        query.update(tour.steps[index].link())
    return query


def go_to(tour_id: str, index: int) -> None:
    """A button's on_click: go to step `index` of a tour, in the next run."""
    st.session_state[_GOTO_KEY] = (tour_id, index)


def leave_tour() -> None:
    """A button's on_click: leave the tour; everything on screen stays as it is."""
    for key in (TOUR_KEY, STEP_KEY):
        if key in st.query_params:
            del st.query_params[key]
    st.session_state.pop(_APPLIED_KEY, None)
    forget_handed_over()


def _follow_goto() -> None:
    goto = st.session_state.pop(_GOTO_KEY, None)
    if goto is None or goto[0] not in tours():
        return
    tour = tours()[goto[0]]
    _switch_to(tour, min(max(int(goto[1]), 0), len(tour.steps) - 1))


def _switch_to(tour: Tour, index: int) -> None:
    """Open step `index`'s lesson with the step's link (the rest of this run is not drawn)."""
    st.switch_page(
        lesson_named(tour.steps[index].lesson).file,
        query_params=step_link(tour, index, controls=False),
    )


def _tour_in_link() -> tuple[Tour | None, int, Note | None]:
    raw = st.query_params.get(TOUR_KEY)
    if raw is None:
        return None, 0, None
    tour = tours().get(raw.strip())
    if tour is None:
        leave_tour()
        return None, 0, Note("tour_unknown", {}, quote=raw[:40])
    step, note = parse_number(st.query_params.get(STEP_KEY, "1"), 1, len(tour.steps), 1)
    if note is not None:
        st.query_params[STEP_KEY] = str(step)
    return tour, int(step) - 1, note


def mark_step_set(tour_id: str | None, step: str | None) -> None:
    """The step (from 1, as a link says it) counts as set already: its controls hold values
    someone else chose (the teacher's, in class mode), which the step must not overwrite."""
    tour = tours().get(tour_id or "")
    index, _ = parse_number(step or "1", 1, len(tour.steps), 1) if tour else (0, None)
    if tour is None:
        st.session_state.pop(_APPLIED_KEY, None)
    else:
        st.session_state[_APPLIED_KEY] = (tour.id, int(index) - 1)


def _apply_step(tour: Tour, index: int) -> None:
    """Set the step's part and controls as its link does, before any of them is drawn."""
    hand_over_link_values(tour.steps[index].link())
    st.session_state[_APPLIED_KEY] = (tour.id, index)


def begin_tour(page: str, present: bool):
    """Before the lesson runs: the tour the link names, its step opened and its controls
    set. Returns the panel's container (filled by finish_tour), or None without a tour."""
    _now.run = run = _TourRun()
    _follow_goto()
    tour, index, note = _tour_in_link()
    if note is not None:
        show_notes([note])
    where = st.container() if present else st.sidebar.container()
    if tour is None:
        own = tour_of_lesson(page)
        if own is not None:
            where.button(
                t("tour.take", title=say(own.title), steps=len(own.steps), minutes=own.minutes),
                key="tour_take",
                icon="🧭",
                on_click=go_to,
                args=(own.id, 0),
                width="stretch",
            )
        return None
    if tour.steps[index].lesson != page:
        _switch_to(tour, index)
    if st.session_state.get(_APPLIED_KEY) != (tour.id, index):
        _apply_step(tour, index)
    run.tour, run.index = tour, index
    return where.container(border=True)


def start_link(where, tour_id: str, label: str | None = None) -> None:
    """A link to a tour's first step (on the home page): opening it starts the tour."""
    tour = tours()[tour_id]
    where.page_link(
        lesson_named(tour.steps[0].lesson).file,
        label=label or say(tour.title),
        icon="🧭",
        query_params=step_link(tour, 0),
    )
