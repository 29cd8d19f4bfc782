"""Every visitor at once on one server (the load in bench/load.py): its errors, rerun
latency and the server's memory, sentences sent whole or typed key by key."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from bench.apps import SHORT, App
from bench.figures import kb, median, ms, percentile
from bench.load import LoadPlan, run_load
from bench.pages import server_work
from bench.sentences import SentenceMaker
from bench.server import RssSampler, Server, active_sessions


@dataclass
class LoadResult:
    errors: str
    latency: str
    memory: str
    ok_errors: bool
    med: float | None
    p95: float | None
    peak: int


def visitors_at_once(
    srv: Server,
    app: App,
    args: argparse.Namespace,
    mk: SentenceMaker,
    typed: bool = False,
    live_pause_s: float | None = None,
):
    """Every visitor at once. `typed`: each types its sentences' last keys key by key
    into a box with `live_pause_s` (None: the pause the page sets), and latency is last
    key → answer."""
    sentences = [[mk.make(SHORT) for _ in range(args.sentences)] for _ in range(args.visitors)]
    # A browser waits for its rerun however long it takes: only the limit cuts.
    plan = LoadPlan(
        page=app.path,
        token_charts=True,
        send_window_s=args.load_s,
        hard_limit_s=args.load_s,
        rerun_timeout_s=args.load_s,
        typed=typed,
        live_pause_s=live_pause_s,
    )
    rss_before = srv.rss()
    with RssSampler(srv.pid) as sampler:
        report = run_load(srv.port, sentences, plan)
    time.sleep(2)
    lat = report.last_key_latencies if typed else report.latencies
    errors = report.errors
    err_text = f"{len(errors)}"
    if errors:
        kinds: dict[str, int] = {}
        for e in errors:
            kind = e.split(": ", 1)[1][:60] if ": " in e else e
            kinds[kind] = kinds.get(kind, 0) + 1
        err_text += " (" + "; ".join(f"{n}× {k}" for k, n in kinds.items()) + ")"
    med, p95 = median(lat), percentile(lat, 95)
    peak = max(sampler.peak, rss_before or 0)
    return LoadResult(
        errors=f"{err_text}; {report.completed} of {report.planned} reruns done, "
        f"{report.not_sent} never sent (window closed); wall {report.wall_s:.0f} s",
        latency=f"median {ms(med)}, p95 {ms(p95)} (n={len(lat)})"
        + (
            f"; {report.commits_per_sentence:.1f} commits sent per sentence"
            if report.commits_per_sentence
            else ""
        ),
        memory=f"{kb(peak)} (before the load {kb(rss_before)}; after {kb(srv.rss())}; "
        f"active sessions after: {active_sessions(srv.port)})",
        ok_errors=not errors and report.not_sent == 0,
        med=med,
        p95=p95,
        peak=peak,
    )


def typed_load(app: App, args: argparse.Namespace, mk: SentenceMaker, pause_ms: int):
    """The visitors typing key by key, on a fresh server warmed by one visit: a load
    before it would leave cut-short reruns behind. `pause_ms` 0: the page's own pause."""
    with Server(script=app.script, extra_args=app.server_args) as srv:
        srv.wait_healthy()
        server_work(srv.port, app.path, 1, mk, SHORT, app)
        return visitors_at_once(
            srv, app, args, mk, typed=True, live_pause_s=pause_ms / 1000 or None
        )
