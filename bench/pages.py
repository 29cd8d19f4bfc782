"""One visitor's reruns on a page, what each page must show of the visitor's sentence,
and the first chart of a fresh server over the websocket."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from bench.apps import SEQLENS, SHORT, App
from bench.checks import TOKEN_CHART_KEYS, check_heads_tokens, check_text_charted, check_words_shown
from bench.figures import median, ms, percentile
from bench.rerun import Rerun
from bench.sentences import SentenceMaker
from bench.server import Server
from bench.wire import Session, run_async

# Pages whose first view does not read the visitor's sentence (trained weights on their task's
# own sequence; the training lab's accuracy against lag): the link that opens their view of
# the visitor's sentence (the one the checks read).
SENTENCE_VIEWS = {"recurrent": {"rc_weights": "constructed"}, "training": {"tr_part": "yours"}}
# Views measured beside the pages, by name: a page and the link that opens it. The attention
# lesson with its tour open at the first step: the step's panel (text, quotes, question) is
# filled in every rerun, so keystroke → chart is measured with a tour open too.
TOUR_VIEWS = {"heads+tour": ("heads", {"tour": "heads", "step": "1"})}
# The parts past a lesson's first, each measured on its own: (lesson, the part key) for every
# lesson whose every part reads the visitor's sentence as they type.
EVERY_PART = ("recurrence",)
# The same tour step added to the typing tab's link (bench/keystrokes.py).
TOUR_QUERY = urlencode(TOUR_VIEWS["heads+tour"][1])


def pages() -> list[tuple[str, str]]:
    """(url path or view name, title): the home page (the frame alone), every lesson in
    LESSONS, the other parts of the lessons in EVERY_PART, then the views of TOUR_VIEWS."""
    return (
        [("", "home (frame only)")]
        + [(lesson.url_path, lesson.url_path) for lesson in _lessons()]
        + [(name, f"{path}, ?{urlencode(query)}") for name, (path, query) in _part_views().items()]
        + [
            (name, f"{path}, tour open (?{urlencode(query)})")
            for name, (path, query) in TOUR_VIEWS.items()
        ]
    )


def _lessons():
    from components.lessons import LESSONS

    return LESSONS


def _part_views() -> dict[str, tuple[str, dict[str, str]]]:
    """`<lesson>:<part>` → (the lesson, the link that opens the part), for EVERY_PART."""
    return {
        f"{lesson.url_path}:{part}": (lesson.url_path, {lesson.part_key: part})
        for lesson in _lessons()
        if lesson.url_path in EVERY_PART
        for part in lesson.parts[1:]
    }


def _opened(page: str) -> tuple[str, dict[str, str]]:
    """The url path and the link's values a page (or a view) is opened with."""
    views = {**_part_views(), **TOUR_VIEWS}
    return views.get(page, (page, SENTENCE_VIEWS.get(page, {})))


def tour_open(run: Rerun) -> str:
    """'' unless the page said the link's tour is not one it has (it then runs without)."""
    from components.i18n import t

    unknown = t("note.tour_unknown", language="en")
    return f"the tour is not open: {unknown}" if unknown in run.alerts else ""


def check_tour_tokens(run: Rerun) -> str:
    """'' when the heads page's token charts that are drawn show `run.sentence`'s tokens,
    one at least: the step's question may hold one of them back until it is answered."""
    from bench.sentences import chart_labels, minilm_tokens

    expected = chart_labels(minilm_tokens(run.sentence)[:128])
    drawn = {key: run.chart_x(key) for key in TOKEN_CHART_KEYS if run.chart_x(key) is not None}
    if not drawn:
        return f"none of {TOKEN_CHART_KEYS} drawn"
    wrong = [key for key, got in drawn.items() if got != expected]
    return f"{wrong} charts show other tokens (expected {expected[:6]}…)" if wrong else ""


def _check(app: App, page: str, run: Rerun) -> str:
    """'' when the answer shows the visitor's own sentence (the home page shows none)."""
    if page in TOUR_VIEWS:
        return tour_open(run) or check_tour_tokens(run)
    if page == app.path:
        return check_heads_tokens(run)
    if page == "training":  # reads the sentence character by character, in one chart
        return check_text_charted(run, "tr_yours")
    return check_words_shown(run) if page else ""


def server_work(
    port: int, page: str, n: int, mk: SentenceMaker, n_tokens: int, app: App | None = None
) -> list[Rerun]:
    """One visitor on `page` of `app` (SeqLens by default): a warm-up run, then `n` fresh
    sentences one after another."""
    app = app or SEQLENS

    async def go() -> list[Rerun]:
        runs = []
        async with Session(port, rerun_timeout_s=60) as s:
            path, query = _opened(page)
            warm = await s.open_page(path, mk.make(SHORT), **query)
            if not warm.ok:
                raise RuntimeError(f"{page or 'home'}: {warm.error}")
            if page in TOUR_VIEWS and tour_open(warm):
                raise RuntimeError(f"{page}: {tour_open(warm)}")
            for _ in range(n):
                await asyncio.sleep(0.2)
                run = await s.type_sentence(mk.make(n_tokens))
                if run.ok:
                    run.error = _check(app, page, run)
                runs.append(run)
        return runs

    return run_async(go())


def summarize_work(runs: list[Rerun]) -> tuple[str, float | None]:
    lat = [r.latency_s for r in runs if r.ok]
    errors = sum(1 for r in runs if not r.ok)
    text = f"median {ms(median(lat))}, p95 {ms(percentile(lat, 95))} (n={len(lat)})"
    if errors:
        text += f"; {errors} errors: {next(r.error for r in runs if not r.ok)}"
    return text, median(lat)


def ws_first_chart(srv: Server, mk: SentenceMaker) -> tuple[float, Rerun]:
    """The server's first visitor deep-links /heads: seconds from process start to chart."""

    async def go() -> Rerun:
        async with Session(srv.port, rerun_timeout_s=120) as s:
            return await s.open_page("heads", mk.make(SHORT))

    run = run_async(go())
    if run.first_chart_s is None:
        raise RuntimeError(f"no chart in the first run: {run.error or 'none drawn'}")
    return run.sent_at + run.first_chart_s - srv.started_at, run
