"""A class opening different lessons at once on a fresh server: every page answers.

Each page's first run imports what it needs; libraries import more lazily (plotly imports
pandas when it first checks an array). Before first runs took turns
(models/serving/runtime.py `first_runs_in_turn`), twelve first visits at once failed a page with
"partially initialized module" in 3 of 4 fresh servers.
"""

from __future__ import annotations

import asyncio

import pytest

from bench.sentences import SentenceMaker
from bench.wire import Session, run_async
from components.lessons import LESSONS

pytestmark = pytest.mark.slow

SERVERS = 2
VISITORS = 12
PAGES = ["", *(lesson.url_path for lesson in LESSONS)]


async def _first_visits(port: int, sentences: list[str]) -> list[str]:
    async def visit(i: int) -> str:
        await asyncio.sleep(0.05 * i)  # arrivals a moment apart, as a class's do
        async with Session(port, rerun_timeout_s=150, connect_timeout_s=60) as s:
            run = await s.open_page(PAGES[i % len(PAGES)], sentences[i])
            return "" if run.ok else f"/{PAGES[i % len(PAGES)]}: {run.error}"

    return list(await asyncio.gather(*(visit(i) for i in range(VISITORS))))


@pytest.mark.parametrize("attempt", range(SERVERS))
def test_first_visits_to_every_page_at_once_all_answer(attempt, running_server):
    mk = SentenceMaker()
    with running_server(f"streamlit-cold-visits-{attempt}") as srv:
        problems = run_async(_first_visits(srv.port, [mk.make(20) for _ in range(VISITORS)]))
    assert not any(problems), [p for p in problems if p]
    log = srv.log_path.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, srv.log_tail(60)
