"""One contract for both backends of the class rooms (components/classroom/): the same calls
give the same answers and the same refusals in this process and in a real Redis."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import redis

from components.classroom import codes
from components.classroom import rooms as rooms_module
from components.classroom.redis_rooms import SOCKET_TIMEOUT_S, RedisRooms
from components.classroom.rooms import (
    PRESENT_S,
    MemoryRooms,
    NotTeacher,
    Presence,
    Refused,
    RoomFull,
    RoomGone,
    Rooms,
)

PREFIX = "test:room:"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Backend:
    name: str
    clock: FakeClock
    url: str | None = None
    made: list[Rooms] = field(default_factory=list)

    def make(self, idle_s: float = rooms_module.IDLE_S) -> Rooms:
        if self.url is None:
            made = MemoryRooms(clock=self.clock, idle_s=idle_s)
        else:
            made = RedisRooms(self.url, prefix=PREFIX, clock=self.clock, idle_s=idle_s)
        self.made.append(made)
        return made

    def wait(self, seconds: float) -> None:
        """Time passes: on the backend's clock, and for Redis's own expiry, really."""
        self.clock.now += seconds
        if self.url is not None:
            time.sleep(seconds)


@pytest.fixture(params=["memory", "redis"])
def backend(request) -> Backend:
    if request.param == "memory":
        yield Backend("memory", FakeClock())
        return
    url = request.getfixturevalue("redis_url")
    made = Backend("redis", FakeClock(), url)
    yield made
    for instance in made.made:
        instance.close()
    with redis.Redis.from_url(url) as client:
        client.flushdb()


@pytest.fixture
def rooms(backend) -> Rooms:
    return backend.make()


@pytest.fixture
def redis_client(redis_url):
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        yield client


def keys_of_room(url: str, code: str) -> list[str]:
    with redis.Redis.from_url(url, decode_responses=True) as client:
        return sorted(client.scan_iter(match=f"{PREFIX}{code}*"))


# --- create, join, follow -----------------------------------------------------------------


def test_create_gives_a_six_character_code_of_the_alphabet_and_a_secret_key(rooms):
    code, key = rooms.create()
    other_code, other_key = rooms.create()
    assert len(code) == 6 and set(code) <= set(codes.ALPHABET)
    assert code != other_code and key != other_key and len(key) >= 24
    assert rooms.count() == 2


def test_join_reads_the_code_loosely_and_returns_it_as_stored(rooms):
    code, _ = rooms.create()
    typed = f" {code[:3].lower()} - {code[3:].lower()} "
    assert rooms.join(typed, "ana") == code


def test_join_of_a_code_that_is_no_room_is_room_gone(rooms):
    rooms.create()
    for typed in ("ACDEFH", "ACD", "not a code at all", "*", ""):
        with pytest.raises(RoomGone):
            rooms.join(typed, "ana")


def test_a_new_room_shows_an_empty_view_at_version_zero(rooms):
    code, _ = rooms.create()
    view = rooms.view(code)
    assert (view.version, view.page, view.params) == (0, "", {})
    assert rooms.question(code) is None


def test_publish_shows_the_view_and_bumps_its_version_only_when_it_changes(rooms):
    code, key = rooms.create()
    assert rooms.publish(code, key, "heads", {"s": ["the cat"], "l": ["2"]}) == 1
    # The same view, its link values in another order: no new version.
    assert rooms.publish(code, key, "heads", {"l": ["2"], "s": ["the cat"]}) == 1
    view = rooms.view(code.lower())
    assert (view.version, view.page, view.params) == (1, "heads", {"s": ["the cat"], "l": ["2"]})
    assert rooms.publish(code, key, "heads", {"s": ["the cat"], "l": ["3"]}) == 2
    assert rooms.publish(code, key, "masks", {"s": ["the cat"], "l": ["3"]}) == 3
    assert rooms.view(code).version == 3


def test_the_same_view_published_by_many_threads_at_once_makes_one_version(rooms):
    code, key = rooms.create()
    versions: list[int] = []
    threads = [
        threading.Thread(target=lambda: versions.append(rooms.publish(code, key, "p", {})))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert versions == [1] * 8


def test_pulse_tells_a_member_the_view_version_the_question_and_whether_revealed(rooms):
    code, key = rooms.create()
    rooms.join(code, "ana")
    first = rooms.pulse(code, "ana", following=True)
    assert (first.view_version, first.question_id, first.revealed) == (0, None, False)
    rooms.publish(code, key, "heads", {})
    number = rooms.ask(code, key, "Which head?", ["0", "1"], right=1)
    asked = rooms.pulse(code, "ana", following=True)
    assert (asked.view_version, asked.question_id, asked.revealed) == (1, number, False)
    rooms.reveal(code, key)
    assert rooms.pulse(code, "ana", following=False).revealed is True


# --- presence ---------------------------------------------------------------------------


def test_presence_counts_members_checked_in_lately_and_those_following(rooms, backend):
    code, key = rooms.create()
    for member in ("ana", "ben", "cy"):
        rooms.join(code, member)
    assert rooms.presence(code, key) == Presence(3, 3)
    rooms.pulse(code, "ben", following=False)
    assert rooms.presence(code, key) == Presence(3, 2)
    backend.clock.now += PRESENT_S / 2
    rooms.pulse(code, "ana", following=True)
    rooms.pulse(code, "ben", following=False)
    backend.clock.now += PRESENT_S / 2 + 0.5  # cy last seen PRESENT_S + 0.5 ago: gone
    assert rooms.presence(code, key) == Presence(2, 1)
    rooms.pulse(code, "ben", following=True)
    assert rooms.presence(code, key) == Presence(2, 2)


def test_a_pulse_from_someone_who_never_joined_counts_for_nothing(rooms):
    code, key = rooms.create()
    rooms.join(code, "ana")
    rooms.pulse(code, "stranger", following=True)
    assert rooms.presence(code, key) == Presence(1, 1)


# --- questions --------------------------------------------------------------------------


def test_the_tally_counts_one_answer_per_member_the_last_one_given(rooms):
    code, key = rooms.create()
    members = ["ana", "ben", "cy", "dee", "eve"]
    for member in members:
        rooms.join(code, member)
    number = rooms.ask(code, key, "Which token?", ["the", "cat", "sat"], right=2)
    assert rooms.tally(code, key) == [0, 0, 0]
    for member, option in zip(members, [0, 2, 2, 1, 2], strict=True):
        rooms.answer(code, member, number, option)
    rooms.answer(code, "ben", number, 0)  # ben changes his mind
    rooms.answer(code, "eve", number, 2)  # eve answers the same again
    assert rooms.tally(code, key) == [2, 1, 2]
    assert rooms.answer_of(code, "ben", number) == 0
    assert rooms.answer_of(code, "ana", number) == 0
    assert rooms.answer_of(code, "nobody", number) is None


def test_a_new_question_starts_an_empty_tally_and_old_answers_are_refused(rooms):
    code, key = rooms.create()
    rooms.join(code, "ana")
    first = rooms.ask(code, key, "One?", ["a", "b"], right=None)
    rooms.answer(code, "ana", first, 1)
    second = rooms.ask(code, key, "Two?", ["a", "b", "c"], right=None)
    assert second == first + 1
    assert rooms.tally(code, key) == [0, 0, 0]
    assert rooms.answer_of(code, "ana", first) is None
    with pytest.raises(Refused):
        rooms.answer(code, "ana", first, 0)
    assert rooms.tally(code, key) == [0, 0, 0]


def test_answers_out_of_bounds_or_from_non_members_are_refused(rooms):
    code, key = rooms.create()
    rooms.join(code, "ana")
    with pytest.raises(Refused):
        rooms.answer(code, "ana", 1, 0)  # nothing asked yet
    number = rooms.ask(code, key, "Which?", ["a", "b"], right=0)
    for member, option in [("ana", 2), ("ana", -1), ("stranger", 0)]:
        with pytest.raises(Refused):
            rooms.answer(code, member, number, option)
    assert rooms.tally(code, key) == [0, 0]


def test_reveal_shows_the_right_option_and_closes_the_question(rooms):
    code, key = rooms.create()
    rooms.join(code, "ana")
    number = rooms.ask(code, key, "Which?", ["a", "b", "c"], right=2)
    before = rooms.question(code)
    assert (before.id, before.text, before.options) == (number, "Which?", ("a", "b", "c"))
    assert (before.revealed, before.right) == (False, None)
    rooms.answer(code, "ana", number, 1)
    rooms.reveal(code, key)
    after = rooms.question(code)
    assert (after.revealed, after.right) == (True, 2)
    with pytest.raises(Refused):
        rooms.answer(code, "ana", number, 2)
    assert rooms.answer_of(code, "ana", number) == 1
    rooms.reveal(code, key, right=0)  # the teacher corrects the answer key
    assert rooms.question(code).right == 0


def test_reveal_without_a_right_option_or_a_question_is_refused(rooms):
    code, key = rooms.create()
    with pytest.raises(Refused):
        rooms.reveal(code, key)
    rooms.ask(code, key, "Poll?", ["yes", "no"], right=None)
    for right in (None, 2, -1):
        with pytest.raises(Refused):
            rooms.reveal(code, key, right)
    assert rooms.question(code).revealed is False
    rooms.reveal(code, key, right=1)
    assert rooms.question(code).right == 1


# --- end and expiry ---------------------------------------------------------------------


def _every_call(rooms: Rooms, code: str, key: str) -> list[Callable[[], object]]:
    return [
        lambda: rooms.join(code, "ana"),
        lambda: rooms.publish(code, key, "p", {}),
        lambda: rooms.view(code),
        lambda: rooms.pulse(code, "ana", True),
        lambda: rooms.presence(code, key),
        lambda: rooms.ask(code, key, "q", ["a", "b"], 0),
        lambda: rooms.question(code),
        lambda: rooms.answer(code, "ana", 1, 0),
        lambda: rooms.answer_of(code, "ana", 1),
        lambda: rooms.tally(code, key),
        lambda: rooms.reveal(code, key),
        lambda: rooms.end(code, key),
    ]


def _fill(rooms: Rooms, code: str, key: str) -> None:
    """A room with a view, members, a question and answers: every key it can have."""
    rooms.publish(code, key, "heads", {"s": ["a b"]})
    rooms.join(code, "ana")
    number = rooms.ask(code, key, "Which?", ["a", "b"], right=0)
    rooms.answer(code, "ana", number, 1)


def test_an_ended_room_is_gone_for_every_call_and_leaves_nothing_behind(rooms, backend):
    code, key = rooms.create()
    kept, _ = rooms.create()
    _fill(rooms, code, key)
    rooms.end(code, key)
    for call in _every_call(rooms, code, key):
        with pytest.raises(RoomGone):
            call()
    assert rooms.count() == 1
    assert rooms.view(kept).version == 0
    if backend.url is not None:
        assert keys_of_room(backend.url, code) == []
        with redis.Redis.from_url(backend.url, decode_responses=True) as client:
            assert client.smembers(f"{PREFIX}rooms") == {kept}


def test_a_room_expires_after_its_teacher_is_idle_and_students_do_not_keep_it(backend):
    rooms = backend.make(idle_s=1.0)
    code, key = rooms.create()
    rooms.publish(code, key, "heads", {})
    number = rooms.ask(code, key, "Which?", ["a", "b"], right=0)
    backend.wait(0.6)
    rooms.presence(code, key)  # the teacher's sign of life
    backend.wait(0.6)
    assert rooms.view(code).version == 1  # 1.2 s after creation, 0.6 s after the teacher
    # Students' keys made after the teacher's last action go with the room all the same.
    rooms.join(code, "ana")
    rooms.answer(code, "ana", number, 1)
    rooms.pulse(code, "ana", True)
    backend.wait(0.6)
    for call in _every_call(rooms, code, key):
        with pytest.raises(RoomGone):
            call()
    assert rooms.count() == 0
    if backend.url is not None:
        assert keys_of_room(backend.url, code) == []


# --- the teacher's key ------------------------------------------------------------------

TEACHER_CALLS = {
    "publish": lambda rooms, code, key: rooms.publish(code, key, "p", {"a": ["1"]}),
    "presence": lambda rooms, code, key: rooms.presence(code, key),
    "ask": lambda rooms, code, key: rooms.ask(code, key, "q", ["a", "b"], 0),
    "tally": lambda rooms, code, key: rooms.tally(code, key),
    "reveal": lambda rooms, code, key: rooms.reveal(code, key, 1),
    "end": lambda rooms, code, key: rooms.end(code, key),
}


@pytest.mark.parametrize("call", TEACHER_CALLS.values(), ids=TEACHER_CALLS.keys())
def test_every_teacher_call_refuses_a_wrong_key_and_changes_nothing(rooms, call):
    code, key = rooms.create()
    other_code, other_key = rooms.create()
    number = rooms.ask(code, key, "Which?", ["a", "b"], right=0)
    for wrong in (other_key, key + "x", "", None):
        with pytest.raises(NotTeacher):
            call(rooms, code, wrong)
    assert rooms.view(code).version == 0
    assert rooms.question(code).id == number and not rooms.question(code).revealed
    assert rooms.count() == 2


# --- bounds -----------------------------------------------------------------------------


def test_a_view_longer_than_max_view_chars_is_refused(rooms, monkeypatch):
    monkeypatch.setattr(rooms_module, "MAX_VIEW_CHARS", 50)
    code, key = rooms.create()
    assert rooms.publish(code, key, "p" * 48, {}) == 1  # 48 + len("{}") == 50
    with pytest.raises(Refused):
        rooms.publish(code, key, "p" * 49, {})
    with pytest.raises(Refused):
        rooms.publish(code, key, "p", {"s": ["x" * 50]})
    assert rooms.view(code).page == "p" * 48


def test_questions_out_of_bounds_are_refused(rooms):
    code, key = rooms.create()
    too_many = [str(i) for i in range(rooms_module.MAX_OPTIONS + 1)]
    long_text = "q" * (rooms_module.MAX_QUESTION_CHARS + 1)
    long_option = "o" * (rooms_module.MAX_OPTION_CHARS + 1)
    for text, options, right in [
        ("q", too_many, None),
        ("q", ["only"], None),
        (long_text, ["a", "b"], None),
        ("q", ["a", long_option], None),
        ("q", ["a", "b"], 2),
    ]:
        with pytest.raises(Refused):
            rooms.ask(code, key, text, options, right)
    assert rooms.question(code) is None
    most = too_many[:-1]
    assert rooms.ask(code, key, "q" * rooms_module.MAX_QUESTION_CHARS, most, 7) == 1
    assert rooms.tally(code, key) == [0] * rooms_module.MAX_OPTIONS


def test_a_room_takes_max_members_and_a_member_may_rejoin(rooms, monkeypatch):
    monkeypatch.setattr(rooms_module, "MAX_MEMBERS", 3)
    code, key = rooms.create()
    for member in ("ana", "ben", "cy"):
        rooms.join(code, member)
    with pytest.raises(RoomFull):
        rooms.join(code, "dee")
    assert rooms.join(code, "ben") == code
    assert rooms.presence(code, key) == Presence(3, 3)


def test_the_server_holds_max_rooms_even_when_created_at_once(rooms, monkeypatch):
    monkeypatch.setattr(rooms_module, "MAX_ROOMS", 3)
    made, refused = [], []

    def create() -> None:
        try:
            made.append(rooms.create())
        except RoomFull:
            refused.append(True)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(made), len(refused), rooms.count()) == (3, 5, 3)
    code, key = made[0]
    rooms.end(code, key)
    assert rooms.create()[0] not in {c for c, _ in made[1:]}
    with pytest.raises(RoomFull):
        rooms.create()


# --- Redis only -------------------------------------------------------------------------


def test_two_servers_on_one_redis_share_the_rooms(redis_url, redis_client):
    first = RedisRooms(redis_url, prefix=PREFIX)
    second = RedisRooms(redis_url, prefix=PREFIX)
    try:
        code, key = first.create()
        second.join(code, "ana")
        second.publish(code, key, "heads", {})
        assert first.view(code).version == 1
        assert first.presence(code, key) == Presence(1, 1)
        assert all(k.startswith(PREFIX) for k in redis_client.scan_iter())
        assert 0 < redis_client.pttl(f"{PREFIX}{code}:members") <= rooms_module.IDLE_S * 1000
    finally:
        first.close()
        second.close()
        redis_client.flushdb()


def test_a_redis_that_refuses_connections_fails_fast_with_a_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    rooms = RedisRooms(f"redis://127.0.0.1:{port}/0")
    started = time.monotonic()
    with pytest.raises(redis.exceptions.ConnectionError):
        rooms.view("ACDEFH")
    assert time.monotonic() - started < 2 * SOCKET_TIMEOUT_S + 1


def test_a_redis_that_never_answers_fails_within_the_socket_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)  # accepts connections, never replies
        rooms = RedisRooms(f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        started = time.monotonic()
        with pytest.raises(redis.exceptions.TimeoutError):
            rooms.pulse("ACDEFH", "ana", True)
        elapsed = time.monotonic() - started
    assert SOCKET_TIMEOUT_S <= elapsed < 2 * SOCKET_TIMEOUT_S + 1
    assert issubclass(redis.exceptions.TimeoutError, redis.exceptions.RedisError)


# --- codes ------------------------------------------------------------------------------


def test_the_code_alphabet_has_no_look_alikes_and_codes_are_six_long():
    assert not set("0O1IL2Z5S8B6G") & set(codes.ALPHABET)
    assert len(set(codes.ALPHABET)) == len(codes.ALPHABET) == 23
    assert codes.LENGTH == 6
    made = {codes.new_code() for _ in range(200)}
    assert all(len(c) == 6 and set(c) <= set(codes.ALPHABET) for c in made)


def test_new_code_draws_again_until_a_code_is_not_taken():
    asked: list[str] = []

    def taken(code: str) -> bool:
        asked.append(code)
        return len(asked) <= 3

    assert codes.new_code(taken) == asked[-1]
    assert len(asked) == 4


def test_a_typed_code_is_read_loosely_but_only_a_real_code_looks_like_one():
    assert codes.normal_code(" acd-efh ") == "ACDEFH"
    assert codes.normal_code("acd efh") == "ACDEFH"
    assert codes.normal_code("a.c_d\tefh") == "ACDEFH"
    assert codes.looks_like_code("acd efh")
    assert not codes.looks_like_code("ACDEF")  # too short
    assert not codes.looks_like_code("ACDEFHJ")  # too long
    assert not codes.looks_like_code("ACDEF0")  # a look-alike
    assert len(codes.normal_code("x" * 10_000)) == codes.LENGTH + 1
    assert codes.spaced("ACDEFH") == "ACD EFH"
