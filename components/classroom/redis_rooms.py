"""The rooms in Redis, for several app servers sharing them: the semantics and bounds of
`MemoryRooms` (components/classroom/rooms.py), held to the same contract tests.

Keys, under a prefix (default "seqlens:room:"), for a room of code C:

    C:meta      hash: the teacher key's sha256 digest, the view's version and the view (JSON)
    C:question  hash: the question's id, text, options (JSON), option count, the right option
                given when asked (hidden), whether revealed, and the right option once revealed
    C:members   hash: member → "<last check-in time> <1 if following, else 0>"
    C:answers   hash: member → option, for the current question
    rooms       set of the live rooms' codes (MAX_ROOMS is counted over it)

Every teacher action sets all of a room's keys to expire IDLE_S later, and a key a student's
action creates expires with its room, so Redis frees an idle room by itself; `end` deletes
them. The `rooms` set drops the codes whose room has expired whenever it is counted.

Each method is one round trip: one Lua script (atomic, so two servers never hand out the same
code, overfill a room or bump a view's version twice) or one read. This is one Redis, not a
Redis Cluster (the scripts reach the `rooms` set and the room's keys together).

A dead or unreachable Redis never hangs a page: every command gives up after SOCKET_TIMEOUT_S
(one retry, for a pooled connection a Redis restart closed) and raises
`redis.exceptions.ConnectionError` or `redis.exceptions.TimeoutError`, both subclasses of
`redis.exceptions.RedisError`, which is what a caller catches to say the rooms are down.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from components.classroom import rooms as bounds
from components.classroom.codes import looks_like_code, new_code, normal_code
from components.classroom.rooms import (
    IDLE_S,
    NotTeacher,
    Presence,
    Pulse,
    Question,
    Refused,
    RoomFull,
    RoomGone,
    Rooms,
    View,
    checked_question,
    checked_view,
    key_digest,
)

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "seqlens:room:"
SOCKET_TIMEOUT_S = 1.5
ROOM_KEYS = ("meta", "question", "members", "answers")
# A fresh code is taken about once in ten million creations; a few tries are plenty.
CODE_TRIES = 8

# KEYS of every room script: 1 meta, 2 question, 3 members, 4 answers, 5 the `rooms` set.
# ARGV[1] and ARGV[2] of a teacher's script: the digest of the key given, IDLE_S in ms.
_PRELUDE = """
local function touch(ms)
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ms) end
end
-- A key a student's action made ends with its room (students never keep a room alive).
local function adopt(key)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
local function teacher()
  local digest = redis.call('HGET', KEYS[1], 'digest')
  if not digest then return 'gone' end
  if digest ~= ARGV[1] then return 'teacher' end
  touch(ARGV[2])
  return nil
end
-- The live rooms' codes: those whose room expired are dropped first.
local function prune(index, prefix)
  for _, code in ipairs(redis.call('SMEMBERS', index)) do
    if redis.call('EXISTS', prefix .. code .. ':meta') == 0 then
      redis.call('SREM', index, code)
    end
  end
  return redis.call('SCARD', index)
end
"""

# ARGV: digest, idle ms, MAX_ROOMS, prefix, code, the empty view.
_CREATE = """
if prune(KEYS[5], ARGV[4]) >= tonumber(ARGV[3]) then return {'full'} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'taken'} end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('HSET', KEYS[1], 'digest', ARGV[1], 'version', 0, 'view', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[5])
return {'ok'}
"""

# KEYS: the `rooms` set. ARGV: prefix.
_COUNT = "return {'ok', prune(KEYS[1], ARGV[1])}"

# ARGV: member, now, MAX_MEMBERS.
_JOIN = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0
    and redis.call('HLEN', KEYS[3]) >= tonumber(ARGV[3]) then
  return {'full'}
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' 1')
adopt(KEYS[3])
return {'ok'}
"""

# ARGV: digest, idle ms, the view (JSON).
_PUBLISH = """
local refusal = teacher()
if refusal then return {refusal} end
if redis.call('HGET', KEYS[1], 'view') ~= ARGV[3] then
  redis.call('HSET', KEYS[1], 'view', ARGV[3])
  return {'ok', redis.call('HINCRBY', KEYS[1], 'version', 1)}
end
return {'ok', tonumber(redis.call('HGET', KEYS[1], 'version'))}
"""

# ARGV: member, now, 1 if following else 0.
_PULSE = """
local version = redis.call('HGET', KEYS[1], 'version')
if not version then return {'gone'} end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
end
local q = redis.call('HMGET', KEYS[2], 'id', 'revealed')
return {'ok', version, q[1] or '', q[2] or '0'}
"""

# ARGV: digest, idle ms, now, PRESENT_S.
_PRESENCE = """
local refusal = teacher()
if refusal then return {refusal} end
local now, window, seen, following = tonumber(ARGV[3]), tonumber(ARGV[4]), 0, 0
for _, value in ipairs(redis.call('HVALS', KEYS[3])) do
  local at, follows = string.match(value, '^(%S+) ([01])$')
  if now - tonumber(at) <= window then
    seen = seen + 1
    if follows == '1' then following = following + 1 end
  end
end
return {'ok', seen, following}
"""

# ARGV: digest, idle ms, text, options (JSON), option count, the hidden right option or ''.
_ASK = """
local refusal = teacher()
if refusal then return {refusal} end
local number = (tonumber(redis.call('HGET', KEYS[2], 'id')) or 0) + 1
redis.call('DEL', KEYS[2], KEYS[4])
redis.call('HSET', KEYS[2], 'id', number, 'text', ARGV[3], 'options', ARGV[4],
  'count', ARGV[5], 'hidden', ARGV[6], 'revealed', 0, 'right', '')
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {'ok', number}
"""

_QUESTION = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
local q = redis.call('HMGET', KEYS[2], 'id', 'text', 'options', 'revealed', 'right')
if not q[1] then return {'ok'} end
return {'ok', q[1], q[2], q[3], q[4], q[5]}
"""

# ARGV: member, question id, option.
_ANSWER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then return {'refused', 'not a member'} end
local q = redis.call('HMGET', KEYS[2], 'id', 'revealed', 'count')
if q[1] ~= ARGV[2] or q[2] ~= '0' then return {'refused', 'not the open question'} end
local option = tonumber(ARGV[3])
if option < 0 or option >= tonumber(q[3]) then return {'refused', 'no such option'} end
redis.call('HSET', KEYS[4], ARGV[1], option)
adopt(KEYS[4])
return {'ok'}
"""

# ARGV: member, question id.
_ANSWER_OF = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if redis.call('HGET', KEYS[2], 'id') ~= ARGV[2] then return {'ok', ''} end
return {'ok', redis.call('HGET', KEYS[4], ARGV[1]) or ''}
"""

_TALLY = """
local refusal = teacher()
if refusal then return {refusal} end
local count = tonumber(redis.call('HGET', KEYS[2], 'count'))
if not count then return {'ok'} end
local counts = {}
for i = 1, count do counts[i] = 0 end
for _, option in ipairs(redis.call('HVALS', KEYS[4])) do
  local i = tonumber(option) + 1
  counts[i] = counts[i] + 1
end
return {'ok', unpack(counts)}
"""

# ARGV: digest, idle ms, the right option or '' (then the one given when asked).
_REVEAL = """
local refusal = teacher()
if refusal then return {refusal} end
local q = redis.call('HMGET', KEYS[2], 'id', 'hidden', 'count')
if not q[1] then return {'refused', 'nothing to reveal'} end
local right = tonumber(ARGV[3]) or tonumber(q[2])
if not right or right < 0 or right >= tonumber(q[3]) then
  return {'refused', 'nothing to reveal'}
end
redis.call('HSET', KEYS[2], 'revealed', 1, 'right', right)
return {'ok'}
"""

# ARGV: digest, idle ms, code.
_END = """
local refusal = teacher()
if refusal then return {refusal} end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('SREM', KEYS[5], ARGV[3])
return {'ok'}
"""

_REFUSALS = {"gone": RoomGone, "teacher": NotTeacher, "full": RoomFull, "refused": Refused}


def connect(url: str) -> redis.Redis:
    """A client that gives up on a dead Redis within seconds, and reads strings."""
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=SOCKET_TIMEOUT_S,
        retry=Retry(NoBackoff(), 1),
    )


def _view_json(page: str, params: dict[str, list[str]]) -> str:
    """One spelling per view, so comparing strings compares views."""
    return json.dumps([page, params], ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _digest(key: str) -> str:
    # A key that is not a string matches no room (an empty digest is never stored).
    return key_digest(key) if isinstance(key, str) else ""


class RedisRooms(Rooms):
    """The rooms in one Redis. `clock` (wall time: servers compare it) stamps check-ins;
    `idle_s` is how long a room lives after its teacher's last action."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.time,
        idle_s: float = IDLE_S,
    ) -> None:
        self._redis = connect(url)
        self._prefix = prefix
        self._clock = clock
        self._idle_ms = max(1, round(idle_s * 1000))
        script = self._redis.register_script
        self._create = script(_PRELUDE + _CREATE)
        self._count = script(_PRELUDE + _COUNT)
        self._join = script(_PRELUDE + _JOIN)
        self._publish = script(_PRELUDE + _PUBLISH)
        self._pulse = script(_PRELUDE + _PULSE)
        self._presence = script(_PRELUDE + _PRESENCE)
        self._ask = script(_PRELUDE + _ASK)
        self._question = script(_PRELUDE + _QUESTION)
        self._answer = script(_PRELUDE + _ANSWER)
        self._answer_of = script(_PRELUDE + _ANSWER_OF)
        self._tally = script(_PRELUDE + _TALLY)
        self._reveal = script(_PRELUDE + _REVEAL)
        self._end = script(_PRELUDE + _END)

    def close(self) -> None:
        self._redis.close()

    def _keys(self, code: str) -> list[str]:
        """The keys of a room, then the `rooms` set (the scripts' KEYS)."""
        return [f"{self._prefix}{code}:{name}" for name in ROOM_KEYS] + [self._index]

    @property
    def _index(self) -> str:
        return f"{self._prefix}rooms"

    def _run(self, script, code: str, *args) -> tuple[str, list]:
        """(the code as stored, what the script returned after its status); a refusal raised."""
        code = normal_code(code)
        if not looks_like_code(code):
            raise RoomGone(code)  # never a key: what a visitor types only reaches real codes
        status, *values = script(keys=self._keys(code), args=list(args))
        if status != "ok":
            raise _REFUSALS[status](*(values or [code]))
        return code, values

    def _teachers(self, script, code: str, key: str, *args) -> list:
        return self._run(script, code, _digest(key), self._idle_ms, *args)[1]

    def create(self) -> tuple[str, str]:
        key = secrets.token_urlsafe(24)
        for _ in range(CODE_TRIES):
            code = new_code()
            status, *_ = self._create(
                keys=self._keys(code),
                args=[key_digest(key), self._idle_ms, bounds.MAX_ROOMS, self._prefix, code]
                + [_view_json("", {})],
            )
            if status == "full":
                raise RoomFull("rooms")
            if status == "ok":
                return code, key
        raise RoomFull("no free code")

    def join(self, code: str, member: str) -> str:
        return self._run(self._join, code, member, repr(self._clock()), bounds.MAX_MEMBERS)[0]

    def publish(self, code: str, key: str, page: str, params: dict[str, list[str]]) -> int:
        page, params = checked_view(page, params)
        (version,) = self._teachers(self._publish, code, key, _view_json(page, params))
        return int(version)

    def view(self, code: str) -> View:
        code = normal_code(code)
        if not looks_like_code(code):
            raise RoomGone(code)
        version, body = self._redis.hmget(self._keys(code)[0], ["version", "view"])
        if version is None:
            raise RoomGone(code)
        page, params = json.loads(body)
        return View(int(version), page, params)

    def pulse(self, code: str, member: str, following: bool) -> Pulse:
        now = repr(self._clock())
        _, (version, question_id, revealed) = self._run(
            self._pulse, code, member, now, int(bool(following))
        )
        return Pulse(int(version), int(question_id) if question_id else None, revealed == "1")

    def presence(self, code: str, key: str) -> Presence:
        now = repr(self._clock())
        members, following = self._teachers(self._presence, code, key, now, bounds.PRESENT_S)
        return Presence(int(members), int(following))

    def ask(self, code: str, key: str, text: str, options, right: int | None) -> int:
        text, options = checked_question(text, options, right)
        hidden = "" if right is None else int(right)
        options_json = json.dumps(options, ensure_ascii=False)
        args = (text, options_json, len(options), hidden)
        (number,) = self._teachers(self._ask, code, key, *args)
        return int(number)

    def question(self, code: str) -> Question | None:
        _, found = self._run(self._question, code)
        if not found:
            return None
        number, text, options, revealed, right = found
        shown = revealed == "1"
        return Question(
            int(number), text, tuple(json.loads(options)), shown, int(right) if shown else None
        )

    def answer(self, code: str, member: str, question_id: int, option: int) -> None:
        self._run(self._answer, code, member, int(question_id), int(option))

    def answer_of(self, code: str, member: str, question_id: int) -> int | None:
        _, (option,) = self._run(self._answer_of, code, member, int(question_id))
        return int(option) if option else None

    def tally(self, code: str, key: str) -> list[int]:
        return [int(n) for n in self._teachers(self._tally, code, key)]

    def reveal(self, code: str, key: str, right: int | None = None) -> None:
        self._teachers(self._reveal, code, key, "" if right is None else int(right))

    def end(self, code: str, key: str) -> None:
        self._teachers(self._end, code, key, normal_code(code))

    def count(self) -> int:
        _, rooms = self._count(keys=[self._index], args=[self._prefix])
        return int(rooms)
