"""The measurements of one app in the order of the table, and those beside them (the
collection diagnosis, BertViz's sizes); a phase that fails is kept as its exception."""

from __future__ import annotations

import argparse
import sys
import time

from bench import bertviz_size, browser
from bench.apps import LONG, SEQLENS, SHORT, App
from bench.figures import failed
from bench.keystrokes import typing_runs
from bench.pages import TOUR_QUERY, pages, server_work, summarize_work, ws_first_chart
from bench.sentences import SentenceMaker
from bench.server import Server
from bench.visitors import typed_load, visitors_at_once

_T0 = time.monotonic()


def log(message: str) -> None:
    print(f"[bench {time.monotonic() - _T0:5.0f} s] {message}", file=sys.stderr, flush=True)


def measure_app(
    app: App, args: argparse.Namespace, br, mk: SentenceMaker, with_pages: bool
) -> dict[str, object]:
    """Every figure for one app, in the order of the table; a failed phase says why."""
    got: dict[str, object] = {}

    def attempt(name: str, fn):
        log(f"{app.name}: {name}")
        try:
            got[name] = fn()
        except Exception as exc:  # noqa: BLE001 - shown in the table
            got[name] = exc

    if br is not None:

        def cold_browser() -> float:
            with Server(script=app.script, extra_args=app.server_args) as srv:
                srv.wait_healthy()
                return browser.first_chart_s(
                    br, srv.base_url, srv.started_wall, mk.make(SHORT), app.path
                )

        attempt("cold_browser", cold_browser)
    srv = Server(script=app.script, extra_args=app.server_args).start()
    try:
        srv.wait_healthy()
        if app is SEQLENS:
            attempt("cold_ws", lambda: ws_first_chart(srv, mk))
        else:
            attempt("cold_ws_peer", lambda: server_work(srv.port, app.path, 1, mk, SHORT, app))
        pages_here = pages() if with_pages else [(app.path, app.path)]
        for page, _title in pages_here:
            attempt(
                f"work:{page}",
                lambda page=page: server_work(srv.port, page, args.n_work, mk, SHORT, app),
            )
        attempt("work_long", lambda: server_work(srv.port, app.path, args.n_long, mk, LONG, app))
        if br is not None:
            attempt(
                "typing",
                lambda: typing_runs(br, app, srv.base_url, mk, args.n_typing, args.n_typing),
            )
        if br is not None and app is SEQLENS:
            attempt(
                "typing:tour",
                lambda: typing_runs(br, app, srv.base_url, mk, args.n_typing, 0, TOUR_QUERY),
            )
        attempt("load", lambda: visitors_at_once(srv, app, args, mk))
    finally:
        srv.stop()
    if app is SEQLENS:
        for pause_ms in args.live_pauses:
            attempt(f"load_live:{pause_ms}", lambda p=pause_ms: typed_load(app, args, mk, p))
    return got


def gc_diagnosis(args: argparse.Namespace, mk: SentenceMaker) -> str:
    """The heads reruns on a server started with Streamlit's post-run gc.collect(2) on,
    Streamlit's default, which SeqLens's config turns off (a command-line config flag;
    the app is unchanged)."""
    log("server work with runner.postScriptGC on")
    try:
        with Server(extra_args=("--runner.postScriptGC", "true")) as gc_srv:
            gc_srv.wait_healthy()
            runs = server_work(gc_srv.port, "heads", args.n_work, mk, SHORT)
        return summarize_work(runs)[0]
    except Exception as exc:  # noqa: BLE001
        return failed(exc)


def bertviz_sizes(ours: dict, mk: SentenceMaker) -> dict[int, str]:
    """BertViz's head view for the same sentences as SeqLens's heads reruns, same model."""
    log("BertViz head view size")
    if not bertviz_size.available():
        return {}
    out = {}
    for n_tokens, key in ((SHORT, "work:heads"), (LONG, "work_long")):
        runs = ours.get(key)
        runs = runs if isinstance(runs, list) else []
        sentence = next((r.sentence for r in runs if r.ok), mk.make(n_tokens))
        out[n_tokens] = bertviz_size.head_view_bytes(sentence)[0]
    return out
