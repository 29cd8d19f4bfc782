"""A class's room: what the teacher shows, who follows it, the question asked and its tally.

One small interface (`Rooms`) with two backends: in this process (`MemoryRooms`, the default:
one laptop needs nothing else) and Redis (components/classroom/redis_rooms.py, for several
servers sharing the rooms). Both keep the same bounds and say no the same way, and
tests/unit/test_rooms.py holds both to one contract.

Who may do what: the teacher's key (returned once by `create`, kept in the teacher's session,
never in a link) is needed to change what the room shows, ask, reveal, read the tally and end
the room. A student is a `member`: an opaque id their session made. A student's answers are
counted and nothing else of theirs is stored, so nothing a student types reaches another.

Bounds: MAX_ROOMS rooms on a server, MAX_MEMBERS in a room, one answer per member per question
(a new one replaces it), a view of at most MAX_VIEW_CHARS, a question of at most MAX_OPTIONS
options of MAX_OPTION_CHARS. A room ends when its teacher ends it, or IDLE_S after the
teacher's last sign of life; its memory goes with it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from components.classroom.codes import new_code, normal_code

MAX_ROOMS = 20
MAX_MEMBERS = 200
MAX_VIEW_CHARS = 64_000
MAX_QUESTION_CHARS = 600
MAX_OPTIONS = 8
MAX_OPTION_CHARS = 200
IDLE_S = 3 * 3600.0
# A member is "in the room" while their page has checked in within this time.
PRESENT_S = 6.0


class RoomError(Exception):
    """The base of the refusals below; its class name says which."""


class RoomGone(RoomError):
    """No such room: never made, ended, or idle too long."""


class NotTeacher(RoomError):
    """The key given is not this room's teacher key."""


class RoomFull(RoomError):
    """The room has MAX_MEMBERS members, or the server MAX_ROOMS rooms."""


class Refused(RoomError):
    """What was sent is out of bounds (too long, too many options, no such option)."""


@dataclass(frozen=True)
class View:
    """What the teacher's page shows: the lesson's page and the link values that set it."""

    version: int
    page: str
    params: dict[str, list[str]]


@dataclass(frozen=True)
class Question:
    """The question the room is asked. `right` is None until it is revealed (for anyone
    reading it without the teacher key)."""

    id: int
    text: str
    options: tuple[str, ...]
    revealed: bool
    right: int | None


@dataclass(frozen=True)
class Pulse:
    """What a member's page checks every moment: has the view or the question changed."""

    view_version: int
    question_id: int | None
    revealed: bool


@dataclass(frozen=True)
class Presence:
    members: int
    following: int


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def is_teacher(digest: str, key: str) -> bool:
    # A session that lost its key passes None: that is a wrong key, not a crash.
    return isinstance(key, str) and hmac.compare_digest(digest, key_digest(key))


def checked_view(page: str, params: dict[str, list[str]]) -> tuple[str, dict[str, list[str]]]:
    params = {str(k): [str(v) for v in vs] for k, vs in params.items()}
    if len(page) + len(json.dumps(params, ensure_ascii=False)) > MAX_VIEW_CHARS:
        raise Refused("view too long")
    return str(page), params


def checked_question(text: str, options, right: int | None) -> tuple[str, tuple[str, ...]]:
    options = tuple(str(o) for o in options)
    if not 2 <= len(options) <= MAX_OPTIONS:
        raise Refused("a question has 2 to MAX_OPTIONS options")
    if len(text) > MAX_QUESTION_CHARS or any(len(o) > MAX_OPTION_CHARS for o in options):
        raise Refused("question too long")
    if right is not None and not 0 <= right < len(options):
        raise Refused("the right option is not an option")
    return str(text), options


class Rooms:
    """The interface both backends offer. Every method that takes `key` raises NotTeacher
    for a wrong one; every method raises RoomGone for a room that is not there."""

    def create(self) -> tuple[str, str]:
        """A new room: (its code, the teacher key). RoomFull when the server has MAX_ROOMS."""
        raise NotImplementedError

    def join(self, code: str, member: str) -> str:
        """`member` joins; returns the room's code as stored (codes are read loosely)."""
        raise NotImplementedError

    def publish(self, code: str, key: str, page: str, params: dict[str, list[str]]) -> int:
        """The teacher's page now shows this; returns the view's version (unchanged when the
        view is the same)."""
        raise NotImplementedError

    def view(self, code: str) -> View:
        raise NotImplementedError

    def pulse(self, code: str, member: str, following: bool) -> Pulse:
        """A member's page checks in (and says whether it follows the teacher)."""
        raise NotImplementedError

    def presence(self, code: str, key: str) -> Presence:
        """How many members checked in lately, and how many of them follow. Counts as the
        teacher's sign of life."""
        raise NotImplementedError

    def ask(self, code: str, key: str, text: str, options, right: int | None) -> int:
        """Ask the room (replacing any question before); returns the question's id."""
        raise NotImplementedError

    def question(self, code: str) -> Question | None:
        raise NotImplementedError

    def answer(self, code: str, member: str, question_id: int, option: int) -> None:
        """A member's answer; a second one replaces the first. Refused for a question that
        is not the current one, one already revealed, or an option it does not have."""
        raise NotImplementedError

    def answer_of(self, code: str, member: str, question_id: int) -> int | None:
        raise NotImplementedError

    def tally(self, code: str, key: str) -> list[int]:
        """The current question's answers per option."""
        raise NotImplementedError

    def reveal(self, code: str, key: str, right: int | None = None) -> None:
        """Reveal the current question's right option (given now, or when it was asked)."""
        raise NotImplementedError

    def end(self, code: str, key: str) -> None:
        raise NotImplementedError

    def count(self) -> int:
        """Rooms on this server now (after dropping idle ones)."""
        raise NotImplementedError


@dataclass
class _Room:
    digest: str
    touched: float
    view: View = field(default_factory=lambda: View(0, "", {}))
    members: dict[str, tuple[float, bool]] = field(default_factory=dict)
    question: Question | None = None
    right: int | None = None
    answers: dict[str, int] = field(default_factory=dict)


class MemoryRooms(Rooms):
    """The rooms of this process, under one lock (every Streamlit session is a thread).
    `clock` and `idle_s` let a test move time on and see a room expire."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, idle_s: float = IDLE_S) -> None:
        self._clock = clock
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._rooms: dict[str, _Room] = {}

    def _sweep(self, now: float) -> None:
        for code in [c for c, r in self._rooms.items() if now - r.touched > self._idle_s]:
            del self._rooms[code]

    def _room(self, code: str) -> tuple[str, _Room]:
        now = self._clock()
        self._sweep(now)
        code = normal_code(code)
        room = self._rooms.get(code)
        if room is None:
            raise RoomGone(code)
        return code, room

    def _teachers(self, code: str, key: str) -> _Room:
        _, room = self._room(code)
        if not is_teacher(room.digest, key):
            raise NotTeacher(code)
        room.touched = self._clock()
        return room

    def create(self) -> tuple[str, str]:
        with self._lock:
            self._sweep(self._clock())
            if len(self._rooms) >= MAX_ROOMS:
                raise RoomFull("rooms")
            code = new_code(taken=self._rooms.__contains__)
            key = secrets.token_urlsafe(24)
            self._rooms[code] = _Room(key_digest(key), self._clock())
            return code, key

    def join(self, code: str, member: str) -> str:
        with self._lock:
            code, room = self._room(code)
            if member not in room.members and len(room.members) >= MAX_MEMBERS:
                raise RoomFull(code)
            room.members[member] = (self._clock(), True)
            return code

    def publish(self, code: str, key: str, page: str, params: dict[str, list[str]]) -> int:
        page, params = checked_view(page, params)
        with self._lock:
            room = self._teachers(code, key)
            if (room.view.page, room.view.params) != (page, params):
                room.view = View(room.view.version + 1, page, params)
            return room.view.version

    def view(self, code: str) -> View:
        with self._lock:
            return self._room(code)[1].view

    def pulse(self, code: str, member: str, following: bool) -> Pulse:
        with self._lock:
            _, room = self._room(code)
            if member in room.members:
                room.members[member] = (self._clock(), following)
            question = room.question
            return Pulse(
                room.view.version,
                None if question is None else question.id,
                question is not None and question.revealed,
            )

    def presence(self, code: str, key: str) -> Presence:
        with self._lock:
            room = self._teachers(code, key)
            now = self._clock()
            seen = [f for t, f in room.members.values() if now - t <= PRESENT_S]
            return Presence(len(seen), sum(seen))

    def ask(self, code: str, key: str, text: str, options, right: int | None) -> int:
        text, options = checked_question(text, options, right)
        with self._lock:
            room = self._teachers(code, key)
            number = 1 if room.question is None else room.question.id + 1
            room.question = Question(number, text, options, False, None)
            room.right, room.answers = right, {}
            return number

    def question(self, code: str) -> Question | None:
        with self._lock:
            return self._room(code)[1].question

    def answer(self, code: str, member: str, question_id: int, option: int) -> None:
        with self._lock:
            _, room = self._room(code)
            question = room.question
            if member not in room.members:
                raise Refused("not a member")
            if question is None or question.id != question_id or question.revealed:
                raise Refused("not the open question")
            if not 0 <= option < len(question.options):
                raise Refused("no such option")
            room.answers[member] = option

    def answer_of(self, code: str, member: str, question_id: int) -> int | None:
        with self._lock:
            _, room = self._room(code)
            if room.question is None or room.question.id != question_id:
                return None
            return room.answers.get(member)

    def tally(self, code: str, key: str) -> list[int]:
        with self._lock:
            room = self._teachers(code, key)
            if room.question is None:
                return []
            counts = [0] * len(room.question.options)
            for option in room.answers.values():
                counts[option] += 1
            return counts

    def reveal(self, code: str, key: str, right: int | None = None) -> None:
        with self._lock:
            room = self._teachers(code, key)
            question = room.question
            right = room.right if right is None else right
            if question is None or right is None or not 0 <= right < len(question.options):
                raise Refused("nothing to reveal")
            room.question = Question(question.id, question.text, question.options, True, right)

    def end(self, code: str, key: str) -> None:
        with self._lock:
            self._teachers(code, key)
            del self._rooms[normal_code(code)]

    def count(self) -> int:
        with self._lock:
            self._sweep(self._clock())
            return len(self._rooms)
