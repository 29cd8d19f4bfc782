"""Guessing room codes: how many wrong codes the server answers per second, whatever the
number of sessions typing them, and what that rate means for a room's code.

Each session opens the home page and types well-formed codes (six characters of the code
alphabet, components/classroom/codes.py) into the class box `_class_code_box`, one after
the other as its answers come back. The app makes every wrong code wait WRONG_WAIT_S under
one lock for the whole server (components/ui/classroom/store.py), so the rate server-wide
is at most 1 / WRONG_WAIT_S, and a session has MAX_JOIN_TRIES wrong codes.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from bench.live import LiveTab, Seen
from components.classroom.codes import ALPHABET, LENGTH
from components.classroom.rooms import IDLE_S, MAX_ROOMS
from components.ui.classroom.store import MAX_JOIN_TRIES

CODE_BOX = "_class_code_box"
ANSWER_TIMEOUT_S = 30.0


@dataclass
class GuessResult:
    sessions: int
    answered: int = 0
    elapsed_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def per_s(self) -> float:
        return self.answered / self.elapsed_s if self.elapsed_s else 0.0


def chance_of_a_hit(per_s: float, rooms: int = MAX_ROOMS, life_s: float = IDLE_S) -> float:
    """Probability that guessing at `per_s` for a room's life finds any of `rooms` live
    rooms (each guess a different code: the best a guesser can do)."""
    guesses = per_s * life_s
    codes = len(ALPHABET) ** LENGTH
    return min(1.0, guesses * rooms / codes)


def wrong_codes(seed: int, taken: set[str] = frozenset()):
    rng = random.Random(seed)  # noqa: S311 - repeatable test codes, not secrets
    while True:
        code = "".join(rng.choice(ALPHABET) for _ in range(LENGTH))
        if code not in taken:
            yield code


def _answered(run: Seen) -> bool:
    return run.full and CODE_BOX in run.widgets and run.shown(CODE_BOX) in ("", None)


async def type_code(tab: LiveTab, code: str) -> Seen | None:
    """Type a code into the class box; the run that answers it (the box emptied)."""
    since = len(tab.seen)
    await tab.set_value(CODE_BOX, code)
    return await tab.wait_run(_answered, since, ANSWER_TIMEOUT_S)


async def open_home(tab: LiveTab) -> Seen | None:
    await tab.connect()
    await tab.open("", {})
    return await tab.wait_run(lambda r: r.full, 0, ANSWER_TIMEOUT_S)


async def guess_rate(port: int, sessions: int = 10, duration_s: float = 10.0) -> GuessResult:
    """`sessions` tabs type wrong codes for `duration_s`; wrong codes answered per second."""
    result = GuessResult(sessions=sessions)
    tabs = [LiveTab(port, f"guesser {i}") for i in range(sessions)]
    try:
        opened = await asyncio.gather(*(open_home(tab) for tab in tabs))
        if not all(opened):
            result.errors.append("a guesser's home page did not open")
            return result
        began = time.monotonic()
        stop_at = began + duration_s
        finished: list[float] = []

        async def guesser(i: int, tab: LiveTab) -> None:
            codes = wrong_codes(i)
            # A session out of tries is answered at once: it stops before.
            for _ in range(MAX_JOIN_TRIES):
                if time.monotonic() >= stop_at:
                    return
                if await type_code(tab, next(codes)) is None:
                    result.errors.append(f"{tab.name}: a wrong code unanswered")
                    return
                finished.append(time.monotonic())

        await asyncio.gather(*(guesser(i, tab) for i, tab in enumerate(tabs)))
        result.answered = len(finished)
        result.elapsed_s = (max(finished) if finished else time.monotonic()) - began
    finally:
        await asyncio.gather(*(tab.close() for tab in tabs), return_exceptions=True)
        result.errors += [e for tab in tabs for e in tab.errors]
    return result
