"""The server's rooms, this session's place in one, and joining with a code.

The server's rooms are components/ui/runs/classroom.py's `rooms()`: in this process, or in
the Redis server SEQLENS_ROOMS_REDIS names. A session is in at most one room: as its teacher
(the teacher key is in this session's state only, never in a link) or as a member (an id
made for the room, unrelated to the session's own secret).

Joining with a typed code is slow to guess: a session has MAX_JOIN_TRIES wrong codes,
and every wrong one waits WRONG_WAIT_S holding one lock for the whole server, so wrong
codes from any number of sessions are answered one at a time (measured by
tests/load/test_room_guessing.py).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from dataclasses import dataclass

import streamlit as st

from components.classroom.codes import looks_like_code, normal_code
from components.classroom.rooms import RoomError, RoomGone
from components.ui.inputs import ROOM_KEY
from components.ui.runs.classroom import rooms

MAX_JOIN_TRIES = 8
WRONG_WAIT_S = 0.5
_WRONG_LOCK = threading.Lock()
_PLACE_KEY = "_class_place"
_TRIES_KEY = "_class_join_tries"
_log = logging.getLogger("seqlens.classroom")


@dataclass(frozen=True)
class Place:
    """Where this session is in a class: `key` for the teacher, `member` for a student."""

    code: str
    key: str | None = None
    member: str | None = None

    @property
    def teaching(self) -> bool:
        return self.key is not None


class Unreachable(RoomError):
    """The rooms' store did not answer (a shared Redis down or slow)."""


def asked(method: str, *args):
    """One call to the rooms; the store's own failures come back as Unreachable."""
    try:
        return getattr(rooms(), method)(*args)
    except RoomError:
        raise
    except Exception as failure:  # the Redis client's errors, whatever their class
        _log.warning("rooms: %s failed: %s", method, failure)
        raise Unreachable(method) from failure


def place() -> Place | None:
    return st.session_state.get(_PLACE_KEY)


def leave() -> None:
    st.session_state.pop(_PLACE_KEY, None)
    if ROOM_KEY in st.query_params:
        del st.query_params[ROOM_KEY]


def start_class() -> None:
    """The "Start a class" button's on_click."""
    code, key = asked("create")
    st.session_state[_PLACE_KEY] = Place(code, key=key)


def end_class() -> None:
    now = place()
    if now is not None and now.teaching:
        with contextlib.suppress(RoomError):  # gone already: nothing to end
            asked("end", now.code, now.key)
    leave()


def tries_left() -> int:
    return MAX_JOIN_TRIES - st.session_state.get(_TRIES_KEY, 0)


def join(typed: str) -> bool:
    """Join the room `typed` names; False (after the server-wide wait) when there is none."""
    if tries_left() <= 0:
        return False
    try:
        if not looks_like_code(typed):
            raise RoomGone(normal_code(typed))
        member = secrets.token_urlsafe(12)
        code = asked("join", typed, member)
    except RoomGone:
        st.session_state[_TRIES_KEY] = st.session_state.get(_TRIES_KEY, 0) + 1
        with _WRONG_LOCK:
            time.sleep(WRONG_WAIT_S)
        return False
    st.session_state[_PLACE_KEY] = Place(code, member=member)
    return True
