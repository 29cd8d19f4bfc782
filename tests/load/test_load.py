"""Forty visitors at once on a fresh server: nobody sees another's sentence, and every
session closes when its visitor leaves.

Correctness under load only; how fast it is goes to `python -m bench`, never asserted here.

After every visitor has left, Streamlit's own gauge `active_sessions`
(GET /_stcore/metrics, on by default) must be back to its figure before the load (0), and
the server's memory outside Streamlit's caches back within 10 % of its figure after a
warm-up wave. Streamlit keeps a left session two minutes for a reconnect; what such a
session holds is kept small (tests/app/test_session_footprint.py). Before that, each kept
session held its page's last namespace through a control's format_func: 700 → 772 MB
after one wave, growing by about 100 MB with every further wave of 200 reruns.

The server runs with MALLOC_ARENA_MAX=2 and MALLOC_MMAP_THRESHOLD_=131072 in its
environment (nothing changes in the app), so RSS follows live memory: with glibc's
defaults it varied between 872 and 1105 MB after identical waves.
"""

from __future__ import annotations

import time

import pytest

from bench.checks import check_heads_tokens
from bench.load import LoadPlan, run_load
from bench.rerun import Rerun
from bench.sentences import SentenceMaker, chart_labels, minilm_tokens
from bench.server import RESULTS_DIR, Server, active_sessions, cache_bytes

pytestmark = pytest.mark.slow

VISITORS = 40
SENTENCES_EACH = 5
TOKENS = 20
# The main wave lasts at most 60 s: visitors stop typing after SEND_WINDOW_S, and a
# rerun not answered by LOAD_LIMIT_S is an error. A slow server types fewer sentences:
# on 2 cores 40 queued reruns took ~15-30 s each to answer (python -m bench), so
# sending stops early enough for the last ones to come back.
SEND_WINDOW_S = 20.0
LOAD_LIMIT_S = 60.0
SETTLE_S = 20.0
RSS_TOLERANCE = 0.10


STEADY_ALLOCATOR = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}


@pytest.fixture(scope="module")
def server(running_server):
    with running_server("streamlit-load-test", env=STEADY_ALLOCATOR) as srv:
        yield srv


def memory_outside_caches(srv: Server) -> int | None:
    """Server RSS less what Streamlit's caches hold (both as Streamlit reports them)."""
    rss, cached = srv.rss(), cache_bytes(srv.port)
    return None if rss is None or cached is None else rss - cached


def wait_settled(srv: Server, sessions: int, limit: float) -> tuple[int | None, int | None]:
    """Poll until the session gauge is back to `sessions` and the memory outside the
    caches is ≤ `limit`, or SETTLE_S has passed; returns the last figures."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        n, mem = active_sessions(srv.port), memory_outside_caches(srv)
        if (n == sessions and mem is not None and mem <= limit) or time.monotonic() > deadline:
            return n, mem
        time.sleep(0.5)  # polling interval, not an assertion


def whose(run: Rerun, owners: dict[tuple[str, ...], int]) -> str:
    """When a chart shows another visitor's sentence, say whose."""
    shown = run.chart_x("one_head")
    owner = owners.get(tuple(shown or ()))
    return f" (visitor {owner}'s sentence)" if owner is not None else ""


def test_forty_visitors_each_get_their_own_sentence_and_all_sessions_close(server: Server):
    mk = SentenceMaker()
    sessions_before = active_sessions(server.port)
    assert sessions_before == 0

    # Warm-up wave: loads the model, fills the caches, grows the allocator.
    warm = run_load(
        server.port,
        [[mk.make(TOKENS) for _ in range(2)] for _ in range(VISITORS)],
        LoadPlan(
            send_window_s=25,
            hard_limit_s=75,
            pause_s=(0.2, 0.8),
            rerun_timeout_s=75,
            connect_timeout_s=60,
        ),
    )
    assert not warm.errors, warm.errors[:5]
    n, _ = wait_settled(server, sessions_before, float("inf"))
    assert n == sessions_before
    mem_warm = memory_outside_caches(server)
    assert mem_warm is not None

    # The load: every visitor its own distinct sentences.
    sentences = [[mk.make(TOKENS) for _ in range(SENTENCES_EACH)] for _ in range(VISITORS)]
    flat = [s for per in sentences for s in per]
    assert len(set(flat)) == len(flat)
    owners = {
        tuple(chart_labels(minilm_tokens(s))): v for v, per in enumerate(sentences) for s in per
    }
    report = run_load(
        server.port,
        sentences,
        LoadPlan(
            send_window_s=SEND_WINDOW_S,
            hard_limit_s=LOAD_LIMIT_S,
            pause_s=(0.2, 0.8),
            ramp_s=2.0,
            rerun_timeout_s=LOAD_LIMIT_S,
            connect_timeout_s=30,
        ),
    )

    assert not report.errors, "\n".join(report.errors[:10])
    assert len(report.visitors) == VISITORS
    for v in report.visitors:
        assert v.reruns, f"visitor {v.visitor} got no page at all"
        for i, run in enumerate(v.reruns):
            assert run.sentence == sentences[v.visitor][i]
            problem = check_heads_tokens(run)
            assert not problem, f"visitor {v.visitor} rerun {i}: {problem}{whose(run, owners)}"
    assert report.completed >= VISITORS

    # Everybody has left: sessions back to the figure before, memory near the warm one.
    limit = mem_warm * (1 + RSS_TOLERANCE)
    n, mem = wait_settled(server, sessions_before, limit)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "load-test.txt").write_text(
        f"warm-up: {warm.completed} reruns; load: {report.completed} reruns in "
        f"{report.wall_s:.0f} s; memory outside caches: warm {mem_warm / 1e6:.0f} MB, "
        f"after {(mem or 0) / 1e6:.0f} MB; active sessions after: {n}\n",
        encoding="utf-8",
    )
    assert n == sessions_before, f"{n} sessions still active after every visitor left"
    assert mem is not None and mem <= limit, (
        f"memory outside the caches {mem_warm / 1e6:.0f} MB after the warm-up, "
        f"{(mem or 0) / 1e6:.0f} MB after the load (limit {limit / 1e6:.0f} MB)"
    )
    # A page that failed showed its visitor a plain message and logged the traceback; the
    # harness may still have counted the rerun as answered.
    log = server.log_path.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, server.log_tail()


def test_visitors_typing_key_by_key_get_the_answer_for_their_whole_sentence(server: Server):
    """Typed key by key with a short live pause, most keys send a commit that cuts the
    running rerun short; each visitor's answer is still its own whole sentence."""
    mk = SentenceMaker()
    sentences = [[mk.make(TOKENS) for _ in range(3)] for _ in range(4)]
    report = run_load(
        server.port,
        sentences,
        LoadPlan(
            send_window_s=40,
            hard_limit_s=60,
            rerun_timeout_s=60,
            connect_timeout_s=60,
            typed=True,
            live_pause_s=0.05,
            key_gap_s=(0.06, 0.2),
        ),
    )
    assert not report.errors, "\n".join(report.errors[:10])
    typed = [run for v in report.visitors for run in v.reruns[1:]]
    assert len(typed) == 8
    for v in report.visitors:
        for i, run in enumerate(v.reruns):
            assert run.sentence == sentences[v.visitor][i]
            assert not check_heads_tokens(run)
    assert all(run.commits > 1 and run.last_key_s is not None for run in typed)
    assert report.commits_per_sentence > 2
