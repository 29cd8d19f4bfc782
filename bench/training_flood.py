"""Sixty sessions from one client press Train on the training page and leave; then a visitor
from another client (another loopback address, 127.0.0.2) presses Train.

`python -m bench.training_flood` starts a server, floods it, and prints how many of the
flood's runs were queued, how long the fresh visitor waited from its press until its run
was training, and how many of the flood's runs the server dropped or stopped once their
pages were gone (from the server's log). tests/load/test_training_flood.py runs the same
flood and checks what must hold. Only servers on 127.0.0.1 are contacted.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from streamlit.proto.BackMsg_pb2 import BackMsg

from bench.rerun import Rerun, chart_key
from bench.server import REPO_ROOT, RESULTS_DIR, Server
from bench.wire import Session, run_async

FLOOD = 60
FLOOD_STEPS = 1500  # the slider's largest: a flood run outlasts the time its page is given
FRESH_STEPS = 10
FRESH_SOURCE = "127.0.0.2"  # another client to the server; the flood leaves from 127.0.0.1
FRESH_WAIT_S = 90.0  # the fresh visitor gives up after this long (a hang guard)
ENDED_WAIT_S = 60.0  # how long the flood's runs are given to end after the fresh one started
PAGE_TIMEOUT_S = 120.0  # sixty training pages at once on two cores
EN = json.loads((REPO_ROOT / "assets/i18n/en/training.json").read_text(encoding="utf-8"))
REFUSALS = (
    "training.queue_full",
    "training.refused.client_runs",
    "training.refused.steps_per_hour",
    "training.refused.too_big",
)
ENDED = re.compile(r"training run (\w+) of client (\S+) (dropped from the queue|stopped at step)")


def _prefix(key: str) -> str | None:
    """The English text of `key` up to its first value (None when the key is unknown)."""
    text = EN.get(key)
    return text.split("{", 1)[0] if text else None


class TrainingSession(Session):
    """A session that presses buttons and polls the training page's run panel as the
    browser does (a timed rerun of the page's fragment)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.buttons: dict[str, str] = {}  # key → widget id
        self.progress: str | None = None  # the last run's progress bar, if it drew one

    def _element(self, el, run: Rerun, now: float) -> None:
        super()._element(el, run, now)
        kind = el.WhichOneof("type")
        if kind == "button":
            self.buttons[chart_key(el.button.id)] = el.button.id
        elif kind == "progress":
            self.progress = el.progress.text

    def _request(self) -> BackMsg:
        msg = BackMsg()
        msg.rerun_script.query_string = urlencode(self.query)
        msg.rerun_script.page_script_hash = self.page_script_hash
        msg.rerun_script.cached_message_hashes.extend(self.cache.hashes())
        return msg

    async def press(self, key: str) -> str:
        msg = self._request()
        widget = msg.rerun_script.widget_states.widgets.add()
        widget.id = self.buttons[key]
        widget.trigger_value = True
        self.progress = None
        return self.outcome(await self._rerun(msg, ""))

    async def poll(self) -> str:
        msg = self._request()
        msg.rerun_script.fragment_id = self.fragment_id
        msg.rerun_script.is_auto_rerun = True
        self.progress = None
        return self.outcome(await self._rerun(msg, ""))

    def outcome(self, run: Rerun) -> str:
        """What the run panel says: refused, queued N, running, done, stopped, failed."""
        if run.error:
            return f"error: {run.error}"
        alerts = run.alerts
        if any(a.startswith(p) for key in REFUSALS if (p := _prefix(key)) for a in alerts):
            return "refused"
        if self.progress is not None:
            return "running"
        queued = [a for a in alerts if a.startswith(_prefix("training.queued"))]
        if queued:
            return "queued " + re.search(r"\d+", queued[0]).group()
        for status in ("done", "stopped", "failed"):
            if any(a.startswith(_prefix(f"training.status.{status}")) for a in alerts):
                return status
        return "no run shown"


@dataclass
class FloodReport:
    flood: Counter = field(default_factory=Counter)  # outcome of each flood press
    fresh: list[str] = field(default_factory=list)  # what the fresh visitor saw, in order
    fresh_start_s: float | None = None  # its press → its run training (or done)

    @property
    def flood_accepted(self) -> int:
        return sum(n for o, n in self.flood.items() if o.startswith(("queued", "running")))

    @property
    def fresh_first_position(self) -> int | None:
        first = self.fresh[0] if self.fresh else ""
        return int(first.split()[1]) if first.startswith("queued") else None


async def _open(port: int, source: str | None, steps: int) -> TrainingSession:
    session = TrainingSession(
        port, rerun_timeout_s=PAGE_TIMEOUT_S, connect_timeout_s=PAGE_TIMEOUT_S, source=source
    )
    await session.connect()
    run = await session.open_page("training", tr_steps=str(steps))
    if run.error or "tr_start" not in session.buttons:
        await session.close()
        raise RuntimeError(f"the training page did not open: {run.error or 'no Train button'}")
    return session


async def _flood(port: int, report: FloodReport) -> None:
    """Every flood page opens first, then all press Train at once, then all leave."""
    sessions = await asyncio.gather(*(_open(port, None, FLOOD_STEPS) for _ in range(FLOOD)))
    try:
        outcomes = await asyncio.gather(*(s.press("tr_start") for s in sessions))
        report.flood.update(outcomes)
    finally:
        await asyncio.gather(*(s.close() for s in sessions))


async def _fresh(port: int, report: FloodReport) -> None:
    session = await _open(port, FRESH_SOURCE, FRESH_STEPS)
    try:
        pressed = time.monotonic()
        seen = await session.press("tr_start")
        while True:
            report.fresh.append(seen)
            if seen in ("running", "done"):
                report.fresh_start_s = time.monotonic() - pressed
                return
            if not seen.startswith("queued") or time.monotonic() - pressed > FRESH_WAIT_S:
                return
            await asyncio.sleep(1.0)  # the page's own polling interval
            seen = await session.poll()
    finally:
        await session.close()


def flood(port: int) -> FloodReport:
    """The flood, then the fresh visitor; bounded by the timeouts above."""

    async def main() -> FloodReport:
        report = FloodReport()
        warm = await _open(port, None, FRESH_STEPS)  # the page's caches, before the clock
        await warm.close()
        await _flood(port, report)
        await _fresh(port, report)
        return report

    return run_async(main())


def ended_runs(log_path: Path, client: str = "local") -> Counter:
    """How many of `client`'s runs the server's log says were dropped or stopped."""
    text = log_path.read_text(encoding="utf-8", errors="replace")
    return Counter(how for _, who, how in ENDED.findall(text) if who == client)


def wait_ended(log_path: Path, runs: int, timeout_s: float = ENDED_WAIT_S) -> Counter:
    """Poll the log until `runs` of the flood's runs are logged as ended, or the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        ended = ended_runs(log_path)
        if sum(ended.values()) >= runs or time.monotonic() > deadline:
            return ended
        time.sleep(0.5)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="seqlens-flood-") as store:
        server = Server(
            log_path=RESULTS_DIR / "streamlit-training-flood.log",
            env={"SEQLENS_VISITOR_MODELS": store},
        )
        with server:
            server.wait_healthy()
            report = flood(server.port)
            ended = wait_ended(server.log_path, report.flood_accepted)
    print(f"flood: {FLOOD} sessions from 127.0.0.1, {FLOOD_STEPS} steps × 4 models each")
    print(f"  press outcomes: {dict(report.flood)}")
    print(f"fresh visitor from {FRESH_SOURCE}: {' → '.join(dict.fromkeys(report.fresh))}")
    started = f"{report.fresh_start_s:.1f} s" if report.fresh_start_s is not None else "never"
    print(f"  press → run training: {started} (gave up after {FRESH_WAIT_S:.0f} s)")
    print(
        f"flood runs dropped from the queue: {ended['dropped from the queue']}, "
        f"stopped while training: {ended['stopped at step']} "
        f"(of {report.flood_accepted} queued)"
    )


if __name__ == "__main__":
    main()
