"""The tour's panel, filled after the lesson has run: the step's text with the numbers it
quotes, its task and whether it is done, its question and, once answered, the answer.

Everything here is computed from what the open part offered in this run
(components/ui/tour.py): a quoted number, an answer and a check come from the numbers the
charts draw, on the learner's own sentence. An answer is computed on the server and kept
there; the browser gets it only once the learner has answered.
"""

from __future__ import annotations

import logging
from functools import partial

import streamlit as st

from components.i18n import t
from components.labels import markdown_literal
from components.tours.probes import Choice, MissingLive, Number, run_probe
from components.tours.schema import Question, Step, Tour, say
from components.ui import tour as tours_now
from components.ui.classroom.questions import offer_to_room

_log = logging.getLogger(__name__)
# How far from 0 a number answer may be.
_NUMBER_LIMIT = 1e12
_RADIO_OPTIONS = 6
# The question a Check was pressed on with no answer chosen: said once, on the next run.
_UNANSWERED_KEY = "tour_unanswered"


def _quoted(value, spec: str) -> str:
    if isinstance(value, str):
        return markdown_literal(value)
    return format(value, spec) if spec else f"{value:g}"


def quotes_of(step: Step, live) -> dict[str, str]:
    """Every number and text the step's sentences quote, from this run's offers."""
    quotes = step.quotes.items()
    return {name: _quoted(run_probe(q.probe, live, q.params), q.format) for name, q in quotes}


def _option_label(labels: tuple[str, ...], index: int) -> str:
    return labels[index]


def _judge(tour_id: str, index: int, answer, labels: tuple[str, ...], key: str) -> None:
    """The Check button's on_click: the verdict on the learner's answer, kept in the session."""
    given = st.session_state.get(key)
    if given is None:
        st.session_state[_UNANSWERED_KEY] = (tour_id, index)
        return
    if isinstance(answer, Choice):
        right, given_text, answer_text = given == answer.right, labels[given], labels[answer.right]
    else:
        given = float(given)
        right = answer.accepts(given)
        given_text, answer_text = f"{given:g}", f"{answer.value:.4g}"
    answers = st.session_state.setdefault(tours_now.ANSWERS_KEY, {})
    answers[(tour_id, index)] = {"right": right, "given": given_text, "answer": answer_text}


def _ask_again(tour_id: str, index: int) -> None:
    st.session_state.get(tours_now.ANSWERS_KEY, {}).pop((tour_id, index), None)


def _question(tour: Tour, index: int, question: Question, live, quotes: dict[str, str]) -> None:
    verdict = tours_now.answer_given(tour, index)
    if verdict is not None:
        if verdict["right"]:
            st.success(t("tour.right", given=verdict["given"]), icon="✅")
        else:
            st.error(t("tour.wrong", given=verdict["given"]), icon="❌")
        st.markdown(say(question.reveal).format(**quotes, answer=verdict["answer"]))
        st.button(
            t("tour.ask_again"), key="tour_ask_again", on_click=_ask_again, args=(tour.id, index)
        )
        return
    answer = run_probe(question.probe, live, question.params)
    st.markdown("**" + say(question.ask).format(**quotes, answer="?") + "**")
    if st.session_state.pop(_UNANSWERED_KEY, None) == (tour.id, index):
        st.warning(t("tour.choose_first"), icon="☝️")
    key = f"tour_answer_{tour.id}_{index}"
    # In a form: choosing or typing an answer sends nothing; checking it is one run.
    with st.form(key=f"tour_form_{tour.id}_{index}", border=False):
        labels = _answer_control(question, answer, key)
        st.form_submit_button(
            t("tour.check"),
            key="tour_check",
            type="primary",
            on_click=_judge,
            args=(tour.id, index, answer, labels, key),
        )
    if isinstance(answer, Choice):
        options = answer.options or tuple(say(question.options))  # as written, not escaped
        offer_to_room(say(question.ask).format(**quotes, answer="?"), options, answer.right)


def _answer_control(question: Question, answer, key: str) -> tuple[str, ...]:
    """The control a question is answered with; the labels of a choice's options."""
    if isinstance(answer, Choice):
        labels = (
            tuple(markdown_literal(o) for o in answer.options)  # the run's: the visitor's text
            if answer.options
            else tuple(say(question.options))
        )
        # A few options side by side to read at a glance; a sentence's tokens in a list.
        ask = st.radio if len(labels) <= _RADIO_OPTIONS else st.selectbox
        ask(
            t("tour.your_answer"),
            range(len(labels)),
            index=None,
            key=key,
            format_func=partial(_option_label, labels),
        )
        return labels
    if isinstance(answer, Number):
        st.number_input(
            t("tour.your_answer"),
            min_value=-_NUMBER_LIMIT,
            max_value=_NUMBER_LIMIT,
            value=None,
            key=key,
            format="%g",
        )
        return ()
    raise TypeError(f"probe {question.probe} gave {type(answer).__name__}, not an answer")


def _task(step: Step, live) -> None:
    task = step.task
    done = bool(run_probe(task.check, live, task.params))
    st.markdown(f"{'✅' if done else '⬜'} **{t('tour.task')}** {say(task.do)}")
    if done:
        st.caption(t("tour.task_done"))


def _navigation(tour: Tour, index: int) -> None:
    st.caption(t("tour.step_of", step=index + 1, steps=len(tour.steps)))
    back, forward = st.columns(2)
    back.button(
        t("tour.back"),
        key="tour_back",
        disabled=index == 0,
        on_click=tours_now.go_to,
        args=(tour.id, index - 1),
        width="stretch",
    )
    last = index == len(tour.steps) - 1
    forward.button(
        t("tour.done") if last else t("tour.next"),
        key="tour_next",
        type="primary",
        on_click=tours_now.leave_tour if last else tours_now.go_to,
        args=() if last else (tour.id, index + 1),
        width="stretch",
    )


def finish_tour(where) -> None:
    """Fill the tour's panel from what the lesson drew in this run."""
    now = tours_now.active()
    if now is None or where is None:
        return
    tour, index = now
    step = tour.steps[index]
    live = tours_now.live_offers()
    with where:
        st.caption(f"🧭 {say(tour.title)}")
        st.markdown(f"**{index + 1}. {say(step.title)}**")
        try:
            quotes = quotes_of(step, live)
            st.markdown(say(step.text).format(**quotes))
            if step.task is not None:
                _task(step, live)
            if step.question is not None:
                _question(tour, index, step.question, live, quotes)
        except MissingLive as missing:  # the part drew nothing (an empty sentence, a failed pass)
            _log.info("tour %s step %d: the part offered no %s", tour.id, index + 1, missing)
            st.caption(t("tour.not_drawn"))
        except Exception:  # noqa: BLE001  (the lesson stays on screen; the log has the rest)
            _log.exception("tour %s step %d failed", tour.id, index + 1)
            st.caption(t("tour.failed"))
        _navigation(tour, index)
        st.button(t("tour.leave"), key="tour_leave", on_click=tours_now.leave_tour, type="tertiary")
