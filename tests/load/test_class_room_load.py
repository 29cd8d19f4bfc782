"""A class on one server: a teacher and sixty students following over Streamlit's websocket
protocol (bench/classroom.py; each student's tab keeps its fragment's 0.5 s timer as a
browser does, bench/live.py).

Asserted: no errors (no exception, no app error message, no wait timed out); every student
saw each of the 20 layer changes; the follow latency's p95 (teacher's run finished →
student's page showing the new layer) is at most 2 s, a requirement of the project; the
60 answers are tallied on the teacher's page exactly; the verdict reached all 60; and the
server's RSS, after the room ended and every tab closed, is within 10 % of its figure after
a warm-up wave (the server runs with the steady allocator of tests/load/test_load.py).
"""

from __future__ import annotations

import pytest

from bench.classroom import CHANGES, STUDENTS, measure_room
from bench.figures import percentile
from bench.server import RESULTS_DIR

pytestmark = pytest.mark.slow

STEADY_ALLOCATOR = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}
RSS_TOLERANCE = 0.10
P95_LIMIT_S = 2.0
# Measured on every run so far at 30 and 60 students (docs/PERFORMANCE.md, "A class room"):
# some students' pages stop following. The full rerun a student's fragment asks for
# (st.rerun(scope="app")) is replaced by a fragment run queued behind it, before the page has
# drawn its fragment again, and the browser, which dropped the fragment's timer when the full
# run began, never gets it back. Strict: the day these pass, the marks must go.
STALLS = pytest.mark.xfail(
    strict=True, reason="students' pages stop following under load (st.rerun from a fragment)"
)


@pytest.fixture(scope="module")
def room(running_server):
    with running_server("streamlit-class-room", env=STEADY_ALLOCATOR) as srv:
        result = measure_room(srv)
        log = srv.log_path.read_text(encoding="utf-8", errors="replace")
    p95 = percentile(result.latencies, 95)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "class-room-test.txt").write_text(
        f"follows {len(result.latencies)}, missed {len(result.missed)}, p95 {p95}, "
        f"tally {result.tally_seen} (expected {result.tally_expected}), verdicts "
        f"{result.verdicts}, RSS {result.rss_before} → {result.rss_after}, "
        f"errors {len(result.errors)}: {result.errors[:20]}\n",
        encoding="utf-8",
    )
    return result, log


@STALLS
def test_the_room_runs_without_an_error(room):
    result, log = room
    assert not result.errors, "\n".join(result.errors[:15])
    assert "Traceback" not in log


@STALLS
def test_every_student_sees_every_change_of_the_teacher(room):
    result, _ = room
    assert not result.missed, f"{len(result.missed)} missed: {result.missed[:10]}"
    assert len(result.latencies) == STUDENTS * CHANGES


@STALLS
def test_students_follow_the_teacher_within_two_seconds_at_the_95th_percentile(room):
    result, _ = room
    # A change a student never saw is a follow slower than any: the p95 is over all 1200.
    assert len(result.latencies) == STUDENTS * CHANGES, f"{len(result.missed)} follows missed"
    p95 = percentile(result.latencies, 95)
    assert p95 is not None and p95 <= P95_LIMIT_S, f"p95 {p95} s over {len(result.latencies)}"


@STALLS
def test_the_teachers_tally_counts_every_answer_exactly(room):
    result, _ = room
    assert sum(result.tally_expected) == STUDENTS
    assert result.tally_seen == result.tally_expected


@STALLS
def test_the_verdict_reaches_every_student(room):
    result, _ = room
    assert result.verdicts == STUDENTS


def test_server_memory_returns_within_ten_percent_after_the_room(room):
    result, _ = room
    assert result.rss_before and result.rss_after
    assert result.sessions_after == 0
    assert result.rss_after <= result.rss_before * (1 + RSS_TOLERANCE), (
        f"RSS {result.rss_before / 1e6:.0f} MB before, {result.rss_after / 1e6:.0f} MB after"
    )
