"""A bounded many-visitor load: every visitor a websocket session (bench/wire.py) on one
page, all at once, the whole load ending by a time limit."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field

from bench.checks import check_heads_tokens, check_words_shown
from bench.rerun import Rerun
from bench.wire import CONNECT_TIMEOUT_S, RERUN_TIMEOUT_S, Session, run_async


@dataclass
class VisitorResult:
    visitor: int
    reruns: list[Rerun] = field(default_factory=list)
    error: str = ""  # connection-level failure
    not_sent: int = 0  # sentences left when the sending window closed


@dataclass
class LoadPlan:
    """How a bounded load runs.

    New sentences are sent only within `send_window_s` of the start; a rerun already
    sent may finish until `hard_limit_s` (then it counts as an error). With both equal,
    the whole load, unanswered reruns included, ends by `hard_limit_s`.
    """

    page: str = "heads"
    send_window_s: float = 60.0
    hard_limit_s: float = 60.0
    pause_s: tuple[float, float] = (0.3, 1.0)  # the visitor reads, then types again
    ramp_s: float = 1.0  # arrivals spread over this long
    rerun_timeout_s: float = RERUN_TIMEOUT_S
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    seed: int = 0
    # Whether answers are checked by their token charts (default: on the heads page).
    token_charts: bool | None = None
    # False: each sentence arrives whole (one rerun). True: the last `typed_keys` of each
    # sentence after the first are typed key by key, `key_gap_s` apart, into a box that
    # commits after `live_pause_s`, or after the pause the page itself sets when that is
    # None (heads page only: answers are told by their charts).
    typed: bool = False
    live_pause_s: float | None = None
    typed_keys: int = 12
    key_gap_s: tuple[float, float] = (0.08, 0.45)


def _check(run: Rerun, plan: LoadPlan) -> str:
    token_charts = plan.token_charts if plan.token_charts is not None else plan.page == "heads"
    return check_heads_tokens(run) if token_charts else check_words_shown(run)


async def visitor(
    index: int,
    port: int,
    sentences: list[str],
    plan: LoadPlan,
    start: float,
    rng: random.Random,
) -> VisitorResult:
    """One visitor: opens /page with its first sentence, then types the others."""
    result = VisitorResult(index)
    await asyncio.sleep(plan.ramp_s * rng.random())
    try:
        async with Session(port, connect_timeout_s=plan.connect_timeout_s) as session:
            for i, sentence in enumerate(sentences):
                now = time.monotonic()
                if now - start >= plan.send_window_s:
                    result.not_sent = len(sentences) - i
                    break
                left = start + plan.hard_limit_s - now
                session.rerun_timeout_s = max(0.5, min(plan.rerun_timeout_s, left))
                session.cut_reason = (
                    f"unanswered at the load's {plan.hard_limit_s:.0f} s limit"
                    if left < plan.rerun_timeout_s
                    else ""
                )
                if i == 0:
                    run = await session.open_page(plan.page, sentence)
                elif plan.typed:
                    typed_from = max(0, len(sentence) - plan.typed_keys)
                    gaps = [rng.uniform(*plan.key_gap_s) for _ in sentence[typed_from + 1 :]]
                    pause = plan.live_pause_s or session.live_pause_s or 0.25
                    run = await session.type_live(sentence, typed_from, gaps, pause)
                else:
                    run = await session.type_sentence(sentence)
                if run.ok:
                    run.error = _check(run, plan)
                result.reruns.append(run)
                if run.latency_s is None:
                    result.not_sent = len(sentences) - i - 1
                    break  # no answer: this visitor gives up
                await asyncio.sleep(rng.uniform(*plan.pause_s))
    except Exception as exc:  # noqa: BLE001 - counted as an error
        result.error = f"{type(exc).__name__}: {exc}"
        result.not_sent = len(sentences) - len(result.reruns)
    return result


@dataclass
class LoadReport:
    visitors: list[VisitorResult]
    wall_s: float
    planned: int

    @property
    def reruns(self) -> list[Rerun]:
        return [r for v in self.visitors for r in v.reruns]

    @property
    def errors(self) -> list[str]:
        errs = [f"visitor {v.visitor}: {v.error}" for v in self.visitors if v.error]
        errs += [
            f"visitor {v.visitor} rerun {i}: {r.error}"
            for v in self.visitors
            for i, r in enumerate(v.reruns)
            if r.error
        ]
        return errs

    @property
    def latencies(self) -> list[float]:
        return [r.latency_s for r in self.reruns if r.latency_s is not None]

    @property
    def last_key_latencies(self) -> list[float]:
        """Last key → answer of the sentences typed key by key."""
        return [r.last_key_s for r in self.reruns if r.last_key_s is not None]

    @property
    def commits_per_sentence(self) -> float | None:
        typed = [r.commits for r in self.reruns if r.commits]
        return statistics.mean(typed) if typed else None

    @property
    def completed(self) -> int:
        return sum(1 for r in self.reruns if r.ok)

    @property
    def not_sent(self) -> int:
        return sum(v.not_sent for v in self.visitors)


def run_load(port: int, sentences_by_visitor: list[list[str]], plan: LoadPlan) -> LoadReport:
    """Every visitor at once (arrivals spread over `plan.ramp_s`), bounded by the plan."""

    async def main() -> LoadReport:
        rng = random.Random(plan.seed)  # noqa: S311 - pauses, not secrets
        start = time.monotonic()
        tasks = [
            asyncio.create_task(
                visitor(i, port, sents, plan, start, random.Random(rng.random()))  # noqa: S311
            )
            for i, sents in enumerate(sentences_by_visitor)
        ]
        done, pending = await asyncio.wait(tasks, timeout=plan.hard_limit_s + 5.0)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5.0)
        results = []
        for i, task in enumerate(tasks):
            if task in done and not task.cancelled() and task.exception() is None:
                results.append(task.result())
            else:
                results.append(VisitorResult(i, error="cancelled at the time limit"))
        return LoadReport(
            results, time.monotonic() - start, sum(len(s) for s in sentences_by_visitor)
        )

    return run_async(main())
