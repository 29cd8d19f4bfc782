"""A class on one server, over Streamlit's websocket protocol: a teacher and sixty students
(bench/live.py's tabs, each keeping its fragment's timer as a browser does).

The room: the teacher opens the attention lesson and starts a class; the students open the
join link `/?room=<code>` read from the teacher's page and follow. The teacher changes the
layer CHANGES times; for each change, a student's follow latency runs from the teacher's
rerun finishing (its script_finished reaching the teacher's tab) to the student's tab
receiving a whole run that shows the new layer. Then the teacher asks a question, every
student answers in a known pattern, the tally on the teacher's page must be that pattern,
the teacher reveals and every student's page must say right or wrong as it should; the
teacher ends the class and every tab closes.

Memory: the server's RSS after a warm-up wave (the teacher's tab shows every layer, and as
many tabs as students open /heads once and leave), then again once the room has ended and
every tab has closed. Each wave leaves its sessions disconnected, kept by Streamlit for a
reconnect, so the two figures compare like with like.

`python -m bench.classroom` runs this and the room-code guessing (bench/guessing.py) on a
server of its own and prints their rows of the bench's table.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field

from bench.live import LiveTab, Seen
from bench.server import active_sessions, cache_bytes
from bench.wire import run_async

STUDENTS = 60
CHANGES = 20
CHANGE_GAP_S = 2.5
LAYERS = 6  # MiniLM's, the attention lesson's default model
DEFAULT_LAYER = 3
# A student not following within FOLLOW_TIMEOUT_S has missed the change (the target is 2 s).
FOLLOW_TIMEOUT_S = 6.0
STEP_TIMEOUT_S = 15.0
SETTLE_S = 25.0
OPTIONS = ("a", "b", "c")
RIGHT = 1  # "b", given to the form as 2 (the form counts from 1)
ANSWERS = (0, 0, 1, 2, 0, 1)  # student i answers ANSWERS[i % 6]: 30 a, 20 b, 10 c
SUCCESS, ERROR = 4, 1  # Alert.Format


def log(message: str) -> None:
    print(f"[class room] {message}", file=sys.stderr, flush=True)


def answer_of(student: int) -> int:
    return ANSWERS[student % len(ANSWERS)]


def expected_tally(students: int) -> list[int]:
    return [sum(answer_of(i) == option for i in range(students)) for option in range(3)]


def layer_changes(changes: int) -> list[int]:
    """Each change a layer other than the one shown: 4, 5, 0, 1, …"""
    return [(DEFAULT_LAYER + 1 + k) % LAYERS for k in range(changes)]


@dataclass
class RoomResult:
    students: int
    changes: int
    latencies: list[float] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # "student 7, change 3"
    tally_expected: list[int] = field(default_factory=list)
    tally_seen: list[int] | None = None
    verdicts: int = 0  # students whose page said right or wrong, as it should
    errors: list[str] = field(default_factory=list)
    rss_before: int | None = None
    rss_after: int | None = None
    outside_caches_before: int | None = None
    outside_caches_after: int | None = None
    sessions_after: int | None = None
    # Students whose page stopped pulsing (no fragment timer left) after the changes.
    stalled: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def answers_tallied(self) -> bool:
        return self.tally_seen == self.tally_expected


def room_code(run: Seen) -> str | None:
    """From the teacher's join link (the st.code block): `…/?room=ACD479`."""
    for text in run.codes:
        if "?room=" in text:
            return text.split("?room=", 1)[1].strip()
    return None


def tally_of(run: Seen) -> list[int] | None:
    """The bar lengths of the tally chart (one horizontal bar an option)."""
    spec = run.charts.get("class_tally")
    if spec is None:
        return None
    x = (json.loads(spec).get("data") or [{}])[0].get("x")
    return [int(v) for v in x] if isinstance(x, list) else None


def _full_with(key: str, value: str):
    return lambda run: run.full and run.shown(key) == value


async def _open_all(tabs: list[LiveTab], page: str, query: dict, ramp_s: float) -> None:
    async def one(i: int, tab: LiveTab) -> None:
        await asyncio.sleep(ramp_s * i / max(1, len(tabs)))
        await tab.connect()
        await tab.open(page, query)

    await asyncio.gather(*(one(i, tab) for i, tab in enumerate(tabs)))


async def _close_all(tabs: list[LiveTab]) -> None:
    await asyncio.gather(*(tab.close() for tab in tabs), return_exceptions=True)


async def _step(tab: LiveTab, test, since: int, what: str, errors: list[str]) -> Seen | None:
    run = await tab.wait_run(test, since, STEP_TIMEOUT_S)
    if run is None:
        errors.append(f"{tab.name}: timed out waiting for {what}")
    return run


async def warm_up(port: int, tabs: int) -> list[str]:
    """The caches and the allocator the room will use: every layer on the teacher's page
    and `tabs` first visits to /heads."""
    errors: list[str] = []
    teacher = LiveTab(port, "warm-up teacher")
    visitors = [LiveTab(port, f"warm-up {i}", source=f"127.0.1.{i + 1}") for i in range(tabs)]
    try:
        await _open_all([teacher], "heads", {}, 0)
        if await _step(teacher, lambda r: r.full, 0, "the first run", errors):
            for layer in range(LAYERS):
                since = len(teacher.seen)
                await teacher.set_value("layer", str(layer))
                await _step(teacher, _full_with("layer", str(layer)), since, "a layer", errors)
        await _open_all(visitors, "heads", {}, 3.0)
        await asyncio.gather(*(_step(v, lambda r: r.full, 0, "/heads", errors) for v in visitors))
    finally:
        await _close_all([teacher, *visitors])
    return errors + [e for tab in [teacher, *visitors] for e in tab.errors]


async def _start_class(teacher: LiveTab, errors: list[str]) -> str | None:
    await _open_all([teacher], "heads", {}, 0)
    if not await _step(teacher, lambda r: r.full, 0, "the first run", errors):
        return None
    since = len(teacher.seen)
    await teacher.click("class_start")
    run = await _step(teacher, lambda r: r.full and room_code(r), since, "the room", errors)
    return room_code(run) if run else None


async def _join(students: list[LiveTab], code: str, errors: list[str]) -> None:
    """Every student on the teacher's lesson, following (the page shows the layer)."""
    await _open_all(students, "", {"room": code}, 3.0)
    shown = _full_with("layer", str(DEFAULT_LAYER))
    await asyncio.gather(*(_step(s, shown, 0, "the teacher's lesson", errors) for s in students))


async def _follow_changes(teacher: LiveTab, students: list[LiveTab], result: RoomResult):
    for k, layer in enumerate(layer_changes(result.changes)):
        began = time.monotonic()
        value = str(layer)
        marks = [len(s.seen) for s in students]
        since = len(teacher.seen)
        await teacher.set_value("layer", value)
        done = await _step(teacher, _full_with("layer", value), since, "its change", result.errors)
        if done is None:
            result.missed += [f"student {i}, change {k}" for i in range(len(students))]
            continue
        runs = await asyncio.gather(
            *(
                s.wait_run(_full_with("layer", value), m, FOLLOW_TIMEOUT_S)
                for s, m in zip(students, marks, strict=True)
            )
        )
        for i, run in enumerate(runs):
            if run is None:
                result.missed.append(f"student {i}, change {k}")
            else:
                result.latencies.append(run.finished_at - done.finished_at)
        log(f"change {k + 1}: {len(result.latencies)} follows, {len(result.missed)} missed")
        await asyncio.sleep(max(0.0, began + CHANGE_GAP_S - time.monotonic()))


def _answer_sent_text() -> str:
    from components.i18n import t

    return t("class.answer_sent")


async def _question(teacher: LiveTab, students: list[LiveTab], result: RoomResult) -> None:
    errors = result.errors
    since = len(teacher.seen)
    marks = [len(s.seen) for s in students]
    await teacher.submit_form(
        "class_question",
        {
            "_class_q_text": "Which one?",
            "_class_q_options": "\n".join(OPTIONS),
            "_class_q_right": RIGHT + 1,
        },
    )
    await _step(teacher, lambda r: r.full, since, "the question asked", errors)

    def radio_key(run: Seen) -> str | None:
        return next((k for k in run.widgets if k.startswith("_class_answer_")), None)

    async def answer(i: int, student: LiveTab, mark: int) -> None:
        run = await _step(student, radio_key, mark, "the question", errors)
        if run is None:
            return
        after = len(student.seen)
        await student.set_value(radio_key(run), OPTIONS[answer_of(i)])
        sent = _answer_sent_text()
        await _step(student, lambda r: sent in r.texts, after, "its answer taken", errors)

    await asyncio.gather(
        *(answer(i, s, m) for i, (s, m) in enumerate(zip(students, marks, strict=True)))
    )
    result.tally_expected = expected_tally(len(students))
    run = await teacher.wait_run(
        lambda r: tally_of(r) == result.tally_expected, since, STEP_TIMEOUT_S
    )
    shown = [tally_of(r) for r in teacher.seen[since:] if tally_of(r) is not None]
    result.tally_seen = tally_of(run) if run else (shown[-1] if shown else None)


async def _reveal(teacher: LiveTab, students: list[LiveTab], result: RoomResult) -> None:
    marks = [len(s.seen) for s in students]
    await teacher.click("class_reveal")

    def verdict(run: Seen) -> bool:
        return any(kind in (SUCCESS, ERROR) for kind, _ in run.alerts)

    async def one(i: int, student: LiveTab, mark: int) -> None:
        run = await _step(student, verdict, mark, "the verdict", result.errors)
        if run is None:
            return
        want = SUCCESS if answer_of(i) == RIGHT else ERROR
        if any(kind == want for kind, _ in run.alerts):
            result.verdicts += 1
        else:
            result.errors.append(f"{student.name}: the verdict said {run.alerts}")

    await asyncio.gather(
        *(one(i, s, m) for i, (s, m) in enumerate(zip(students, marks, strict=True)))
    )


async def _end(teacher: LiveTab, result: RoomResult) -> None:
    since = len(teacher.seen)
    await teacher.click("class_end")
    await _step(
        teacher, lambda r: r.full and "class_end" not in r.widgets, since, "the end", result.errors
    )


async def class_room(port: int, students: int = STUDENTS, changes: int = CHANGES) -> RoomResult:
    """The room itself (no memory figures: see `measure_room`)."""
    result = RoomResult(students=students, changes=changes)
    teacher = LiveTab(port, "teacher")
    # Each student a machine of its own, as in a classroom (the page slots are shared out
    # by client address: models/serving/fair_slots.py).
    tabs = [LiveTab(port, f"student {i}", source=f"127.0.1.{i + 1}") for i in range(students)]
    began = time.monotonic()
    try:
        code = await _start_class(teacher, result.errors)
        if code is None:
            return result
        log(f"room {code}: {students} students join")
        await _join(tabs, code, result.errors)
        log(f"the teacher changes the layer {changes} times")
        await _follow_changes(teacher, tabs, result)
        result.stalled = [tab.name for tab in tabs if not tab.pulsing]
        log("a question")
        await _question(teacher, tabs, result)
        log("the reveal")
        await _reveal(teacher, tabs, result)
        log("the end")
        await _end(teacher, result)
    except Exception as exc:  # noqa: BLE001 - reported with the figures so far
        result.errors.append(f"the room stopped: {type(exc).__name__}: {exc}")
    finally:
        await _close_all([teacher, *tabs])
        result.wall_s = time.monotonic() - began
        result.errors += [e for tab in [teacher, *tabs] for e in tab.errors]
        sends = sum(tab.timer_sends for tab in tabs)
        result.notes.append(f"{sends} fragment reruns sent by the students' timers")
    return result


def outside_caches(srv) -> int | None:
    rss, cached = srv.rss(), cache_bytes(srv.port)
    return None if rss is None or cached is None else rss - cached


def settle(srv, limit: float) -> int | None:
    """Wait (≤ SETTLE_S) for every session to close and RSS to come down to `limit`."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        n, rss = active_sessions(srv.port), srv.rss()
        if (n == 0 and rss is not None and rss <= limit) or time.monotonic() > deadline:
            return n
        time.sleep(0.5)  # polling interval


def measure_room(srv, students: int = STUDENTS, changes: int = CHANGES) -> RoomResult:
    """Warm-up, RSS, the room, RSS again, on a server already started (bench/server.py)."""
    warm_errors = run_async(warm_up(srv.port, students + 1))
    settle(srv, float("inf"))
    rss_before, outside_before = srv.rss(), outside_caches(srv)
    result = run_async(class_room(srv.port, students, changes))
    result.errors = [*(f"warm-up: {e}" for e in warm_errors), *result.errors]
    result.rss_before, result.outside_caches_before = rss_before, outside_before
    result.sessions_after = settle(srv, (rss_before or 0) * 1.10)
    result.rss_after, result.outside_caches_after = srv.rss(), outside_caches(srv)
    return result


def measure(students: int = STUDENTS, changes: int = CHANGES, guessers: int = 10):
    """The room on a server of its own, then the guessing on another: (room, guesses)."""
    from bench.guessing import guess_rate
    from bench.server import RESULTS_DIR, Server

    env = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}
    with Server(log_path=RESULTS_DIR / "streamlit-class-room.log", env=env) as srv:
        srv.wait_healthy()
        log("warm-up, then the room")
        room = measure_room(srv, students, changes)
    with Server(log_path=RESULTS_DIR / "streamlit-room-guessing.log") as srv:
        srv.wait_healthy()
        log(f"{guessers} sessions guess room codes")
        guesses = run_async(guess_rate(srv.port, guessers))
    return room, guesses


def main() -> int:
    from datetime import UTC, datetime

    from bench.report import Row, add_class_rows, table

    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    room, guesses = measure()
    rows: list[Row] = []
    add_class_rows(rows, room, guesses)
    out = "\n".join([f"## SeqLens class room ({started})", "", table(rows), ""])
    print(out)
    from bench.server import RESULTS_DIR

    (RESULTS_DIR / "classroom.md").write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
