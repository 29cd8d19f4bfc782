"""How much training one client may ask of a shared server, and the operator's clear request.

A class shares one server, and a page costs nothing to open: a script opens sixty sessions
in seconds, each with a fresh visitor key. So the limits hold per client, the connection's
IP address (every visitor on this machine, where Streamlit reports no address, is the one
client "local"), not per key or session:

- a session has at most one run queued or training (a new one replaces it);
- a client has at most `PER_CLIENT` runs queued or training;
- a client trains at most `STEPS_PER_HOUR` steps × models within any hour.

Each can be set by an environment variable; a value that is not a number in range is
ignored with a warning in the server's log. The operator clears every queued and running
run with `python -m models.training.jobs clear`, which leaves a file in the server's state folder
that the job manager looks for (models/training/jobs.py). No streamlit here.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

_LOG = logging.getLogger("seqlens.jobs")

LOCAL = "local"  # the client of every connection from this machine
BUDGET_WINDOW_S = 3600.0
CLEAR_FILE = "clear-training-queue"


def env_number(name: str, default: float, low: float, high: float) -> float:
    """The number in environment variable `name`, or `default` when it is unset, not a
    number, or outside [low, high]."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # also false for nan
        _LOG.warning("%s=%r is not a number in [%g, %g]; using %g", name, raw, low, high, default)
        return default
    return value


PER_SESSION = 1  # a new run from a session replaces its unfinished one
PER_CLIENT = int(env_number("SEQLENS_TRAINING_PER_CLIENT", 3, 1, 1000))
# MAX_STEPS (3000) × 4 models is 12,000: a client may train about three full runs an hour.
STEPS_PER_HOUR = int(env_number("SEQLENS_TRAINING_STEPS_PER_HOUR", 40_000, 1, 1e9))
# A page asks about its run every second; a queued run not asked about for this long has
# lost its page (closed tab, script that left) and only holds up the visitors behind it.
QUEUED_TIMEOUT_S = env_number("SEQLENS_TRAINING_WAIT_S", 15.0, 2.0, 3600.0)
# A running run is given longer: a browser's websocket reconnects within seconds, and a
# busy server's rerun that keeps the page from polling lasts a few seconds more. 45 s
# covers both many times over, yet frees the trainer of an abandoned run soon enough
# that the next visitor's run starts within a minute.
RECONNECT_S = env_number("SEQLENS_TRAINING_RECONNECT_S", 45.0, 5.0, 3600.0)


@dataclass(frozen=True)
class Limits:
    per_client: int = PER_CLIENT
    steps_per_hour: int = STEPS_PER_HOUR
    queued_timeout_s: float = QUEUED_TIMEOUT_S
    reconnect_s: float = RECONNECT_S


@dataclass(frozen=True)
class Requester:
    """Who asked for a run: the session that owns it, the connection's IP (None from this
    machine) and the visitor key its models are saved under."""

    session: str
    ip: str | None
    visitor: str

    @property
    def client(self) -> str:
        return self.ip or LOCAL


class Refused(RuntimeError):
    """A run the server will not queue: which limit, the limit's value, and in how many
    seconds the client may try again (None when that depends on its other runs ending)."""

    def __init__(self, limit: str, allowed: int, retry_after_s: float | None = None):
        self.limit, self.allowed, self.retry_after_s = limit, allowed, retry_after_s
        wait = f"; try again in {retry_after_s:.0f} s" if retry_after_s is not None else ""
        super().__init__(f"refused by the {limit} limit ({allowed}){wait}")


CLIENT_RUNS, STEPS_BUDGET, TOO_BIG, QUEUE = "client_runs", "steps_per_hour", "too_big", "queue"


class StepBudget:
    """Steps × models each client asked for within the last hour. A run is charged its
    whole request when queued, and settled to what it trained when it ends, so a run
    dropped from the queue or stopped early costs only what it used. Not thread-safe: the
    job manager calls it under its lock."""

    def __init__(self, per_hour: int, window_s: float = BUDGET_WINDOW_S):
        self.per_hour, self.window_s = per_hour, window_s
        self._charges: dict[str, list] = {}  # job id → [client, at, cost]

    def check(self, client: str, cost: int, now: float, credit: int = 0) -> None:
        """Raise Refused unless `cost` more fits; `credit` is given back first (the part
        of the client's run this one replaces that has not trained yet)."""
        if cost > self.per_hour:
            raise Refused(TOO_BIG, self.per_hour)
        self._forget(now)
        mine = sorted((at, c) for who, at, c in self._charges.values() if who == client)
        over = sum(c for _, c in mine) - credit + cost - self.per_hour
        if over <= 0:
            return
        for at, c in mine:  # the oldest charges leave the window first
            over -= c
            if over <= 0:
                raise Refused(STEPS_BUDGET, self.per_hour, max(0.0, at + self.window_s - now))
        raise Refused(STEPS_BUDGET, self.per_hour, self.window_s)

    def charge(self, job_id: str, client: str, cost: int, now: float) -> None:
        self._charges[job_id] = [client, now, cost]

    def settle(self, job_id: str, cost: int) -> None:
        if job_id in self._charges:
            self._charges[job_id][2] = min(self._charges[job_id][2], cost)

    def _forget(self, now: float) -> None:
        old = [j for j, (_, at, _) in self._charges.items() if now - at >= self.window_s]
        for job_id in old:
            del self._charges[job_id]


class ClearRequest:
    """The operator's request to clear the queue: a file in the server's state folder."""

    def __init__(self, folder: Path | str | None):
        self.path = Path(folder) / CLEAR_FILE if folder is not None else None

    def ask(self) -> Path:
        assert self.path is not None
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path.write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"), encoding="utf-8")
        return self.path

    def pending(self) -> bool:
        """One stat: cheap enough to ask between training steps."""
        return self.path is not None and self.path.exists()

    def done(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    """Ask the running server to clear its training queue
    (`python -m models.training.jobs clear`)."""
    parser = argparse.ArgumentParser(
        prog="python -m models.training.jobs", description=main.__doc__
    )
    parser.add_argument("command", choices=["clear"])
    parser.add_argument(
        "--root",
        type=Path,
        help="the server's state folder (default: the visitor store's, as the server "
        "finds it from SEQLENS_VISITOR_MODELS)",
    )
    args = parser.parse_args(argv)
    if args.root is None:
        from models.serving.visitor_store import VisitorStore

        args.root = VisitorStore().root
    path = ClearRequest(args.root).ask()
    print(
        f"Asked the server to clear its training queue ({path}). It stops every queued "
        "and running run at its next submit or training step, then removes the file."
    )
    return 0
