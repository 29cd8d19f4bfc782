"""The tour on screen: the step's text beside the live charts, its question, its task.

The frame reads the tour and step from the link before the lesson runs (`begin_tour`):
a step opens its part and sets its controls as a link would. While the lesson runs, the
open part offers the numbers its charts draw (`offer`) and asks whether a chart must wait
for the learner's answer (`held_back`). After the lesson, the frame fills the tour's panel
(`finish_tour`): the step's text with every quoted number from those offers, the question,
and, once answered, the answer computed from the same offers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import streamlit as st

from components.tours.probes import Live
from components.tours.schema import Step, Tour

# This run's tour step and offers: each script run has its own thread.
_now = threading.local()
ANSWERS_KEY = "_tour_answers"


def _state() -> tuple[Tour | None, int, dict]:
    return getattr(_now, "tour", None), getattr(_now, "index", 0), getattr(_now, "offers", {})


def current_step() -> Step | None:
    tour, index, _ = _state()
    return None if tour is None else tour.steps[index]


def offer(name: str, **values: Any) -> None:
    """What an open part's charts draw, for the tour step's quotes, answers and checks.
    Cheap: it keeps references to arrays the part computed anyway."""
    _, _, offers = _state()
    offers[name] = values


def live_offers() -> Live:
    return Live(_state()[2])


def answered(tour: Tour, index: int) -> Any:
    """The learner's answer to a step's question in this session, or None."""
    return st.session_state.get(ANSWERS_KEY, {}).get((tour.id, index))


def held_back(chart: str) -> bool:
    """Whether `chart` waits for the learner's answer to the current step's question."""
    tour, index, _ = _state()
    if tour is None:
        return False
    question = tour.steps[index].question
    return question is not None and question.hides == chart and answered(tour, index) is None


def offers_so_far() -> Mapping[str, Mapping[str, Any]]:
    return dict(_state()[2])
