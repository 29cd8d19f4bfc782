"""`python -m bench`: SeqLens's performance, measured on this machine, as one markdown table.

Starts `streamlit run app.py` itself on 127.0.0.1 (a fresh server for each cold-start
figure), drives it with the websocket client in bench/wire.py and, when playwright and
Chromium are there, with headless Chromium; stops every server it started, even on error.
Bounded: each phase has its own time limit; the whole run takes about 4-5 minutes.
The table also goes to bench/results/latest.md (git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from importlib import metadata

from bench import bertviz_size, browser, gradient_flow
from bench.checks import check_heads_tokens, check_text_charted, check_words_shown
from bench.load import LoadPlan, percentile, run_load
from bench.rerun import Rerun
from bench.sentences import SentenceMaker, chart_labels, minilm_tokens
from bench.server import RESULTS_DIR, RssSampler, Server, active_sessions
from bench.wire import Session, run_async
from components.ui.inputs import ACTIVE_WINDOW_S, BUSY_PAUSE_MS, SENTENCE_PAUSES_MS

SHORT, LONG = 20, 128  # tokens, [CLS] and [SEP] included
# Pages whose first view shows trained weights on their task's own sequence: the link that
# opens their view of the visitor's sentence (the one the checks read).
SENTENCE_VIEWS = {"recurrent": {"rc_weights": "constructed"}}


def pages() -> list[tuple[str, str]]:
    """(url path, title): the home page (the frame alone), then every lesson in LESSONS."""
    from components.lessons import LESSONS

    return [("", "home (frame only)")] + [(lesson.url_path, lesson.url_path) for lesson in LESSONS]


_T0 = time.monotonic()


def log(message: str) -> None:
    print(f"[bench {time.monotonic() - _T0:5.0f} s] {message}", file=sys.stderr, flush=True)


@dataclass
class Row:
    measure: str
    result: str  # SeqLens
    peer: str = "—"  # the same figure for the peer, measured in the same run
    target: str = "—"
    met: str = ""


def ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.0f} ms"


def kb(n: float | None) -> str:
    if n is None:
        return "n/a"
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("yes" if ok else "**no**")


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def versions() -> dict[str, str]:
    out = {}
    for name in ("torch", "streamlit", "plotly", "transformers", "websockets", "playwright"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine_facts(chromium_version: str) -> list[str]:
    v = versions()
    cpus = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cpus
    return [
        f"cores: {usable} usable of {cpus} ({platform.machine()}, {platform.system()})",
        f"python {platform.python_version()}; torch {v['torch']}; streamlit {v['streamlit']}; "
        f"plotly {v['plotly']}; transformers {v['transformers']}; "
        f"websockets {v['websockets']}; playwright {v['playwright']}",
        f"browser: {chromium_version}",
    ]


# --------------------------------------------------------------------------- phases


@dataclass(frozen=True)
class App:
    """What a measurement runs against: SeqLens, or the peer written the straightforward way."""

    name: str
    script: str  # relative to the repository root
    path: str  # the attention page's URL path
    min_charts: int  # charts its attention page draws
    server_args: tuple[str, ...] = ()  # `streamlit run` flags for this app's servers


SEQLENS = App("SeqLens", "app.py", "heads", 4)
# Every script run from the repository reads its .streamlit/config.toml, which turns
# Streamlit's collection after every rerun off for SeqLens; the peer keeps the default.
PEER = App("peer", "bench/peer/app.py", "", 2, ("--runner.postScriptGC", "true"))


def _check(app: App, page: str, run: Rerun) -> str:
    """'' when the answer shows the visitor's own sentence (the home page shows none)."""
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
            warm = await s.open_page(page, mk.make(SHORT), **SENTENCE_VIEWS.get(page, {}))
            if not warm.ok:
                raise RuntimeError(f"{page or 'home'}: {warm.error}")
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


def typing_runs(
    b: browser.Browser, app: App, base_url: str, mk: SentenceMaker, n_short: int, n_long: int
) -> dict[int, tuple[list[float], list[str]]]:
    def open_tab(sentence: str) -> browser.TypingBench:
        labels = chart_labels(minilm_tokens(sentence))
        return browser.TypingBench(b, base_url, sentence, labels, app.path, app.min_charts)

    # One visitor on an idle server, as the target asks: the sessions of the steps before
    # count as visitors being answered for ACTIVE_WINDOW_S, and the page would set the
    # longer pause of a busy server.
    time.sleep(ACTIVE_WINDOW_S + 1)
    s0 = mk.make(SHORT)
    tb = open_tab(s0)
    out: dict[int, tuple[list[float], list[str]]] = {SHORT: ([], []), LONG: ([], [])}
    prev = s0
    try:
        for n_tokens, count in ((SHORT, n_short), (LONG, n_long)):
            for _ in range(count):
                sentence = mk.make(n_tokens, avoid=set(prev.lower().split()))
                labels = chart_labels(minilm_tokens(sentence)[:LONG])
                try:
                    latency, _ = tb.type_sentence(sentence, labels)
                    out[n_tokens][0].append(latency)
                    prev = sentence
                except Exception as exc:  # noqa: BLE001 - counted and shown
                    out[n_tokens][1].append(f"{type(exc).__name__}: {str(exc)[:120]}")
                    tb.close()
                    tb = open_tab(s0)
                    prev = s0
    finally:
        tb.close()
    return out


def typing_text(lat: list[float], errs: list[str]) -> str:
    text = f"median {ms(median(lat))}, p95 {ms(percentile(lat, 95))} (n={len(lat)})"
    return text + (f"; {len(errs)} failed: {errs[0]}" if errs else "")


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
        attempt("load", lambda: visitors_at_once(srv, app, args, mk))
    finally:
        srv.stop()
    if app is SEQLENS:
        for pause_ms in args.live_pauses:
            attempt(f"load_live:{pause_ms}", lambda p=pause_ms: typed_load(app, args, mk, p))
    return got


PAUSES = (
    ", ".join(f"{ms} ms up to {most} visitors" for most, ms in SENTENCE_PAUSES_MS)
    + f", {BUSY_PAUSE_MS} ms beyond"
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


def ws_first_chart(srv: Server, mk: SentenceMaker) -> tuple[float, Rerun]:
    """The server's first visitor deep-links /heads: seconds from process start to chart."""

    async def go() -> Rerun:
        async with Session(srv.port, rerun_timeout_s=120) as s:
            return await s.open_page("heads", mk.make(SHORT))

    run = run_async(go())
    if run.first_chart_s is None:
        raise RuntimeError(f"no chart in the first run: {run.error or 'none drawn'}")
    return run.sent_at + run.first_chart_s - srv.started_at, run


def failed(value) -> str:
    return f"failed: {type(value).__name__}: {str(value)[:160]}"


# --------------------------------------------------------------------------- main


def run(args: argparse.Namespace, rows: list[Row], notes: list[str]) -> list[str]:
    """Measure SeqLens and its peer, appending to `rows`; returns the machine facts."""
    mk = SentenceMaker()
    why_no_browser = "disabled (--no-browser)" if args.no_browser else browser.available()
    chromium_version = f"not used: {why_no_browser}" if why_no_browser else ""
    br = None
    if not why_no_browser:
        br = browser.Browser().__enter__()
        chromium_version = f"Chromium {br.chromium.version} (headless, {browser.CHROMIUM})"
    t_start = time.monotonic()
    try:
        ours = measure_app(SEQLENS, args, br, mk, with_pages=True)
        peer = measure_app(PEER, args, br, mk, with_pages=False) if args.peer else {}
        gc_text = gc_diagnosis(args, mk) if args.gc_check else None
        bertviz = bertviz_sizes(ours, mk)
        log("gradient flow, T = 512")
        flow = gradient_flow.measure()
    finally:
        if br is not None:
            br.__exit__(None, None, None)
        notes.append(f"bench wall time: {time.monotonic() - t_start:.0f} s")
    add_rows(rows, ours, peer, bertviz, gc_text, args, why_no_browser)
    add_flow_rows(rows, flow)
    return machine_facts(chromium_version)


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


def _work_cell(value) -> tuple[str, float | None]:
    return summarize_work(value) if isinstance(value, list) else (failed(value), None)


def _bytes_cell(value) -> tuple[str, float | None]:
    if not isinstance(value, list):
        return ("n/a" if value is None else failed(value)), None
    runs = [r for r in value if r.ok]
    sizes = [r.bytes for r in runs]
    keys = sorted({k for r in runs for k in r.charts})
    parts = ", ".join(
        f"{k} {kb(median([len(r.charts[k]) for r in runs if k in r.charts]))}" for k in keys
    )
    return f"median {kb(median(sizes))} (n={len(sizes)}; chart specs: {parts})", median(sizes)


def add_rows(rows, ours, peer, bertviz, gc_text, args, why_no_browser) -> None:
    absent = "not measured" if not args.peer else "n/a"
    # 1. First chart after `streamlit run`.
    if "cold_browser" in ours:
        value, theirs = ours["cold_browser"], peer.get("cold_browser")
        ok = isinstance(value, float) and value <= 8
        rows.append(
            Row(
                "First chart after `streamlit run` (headless Chromium, deep link to the "
                "attention page as first visit)",
                f"{value:.1f} s" if isinstance(value, float) else failed(value),
                f"{theirs:.1f} s" if isinstance(theirs, float) else absent,
                "≤ 8 s",
                verdict(ok),
            )
        )
    else:
        rows.append(Row("First chart (Chromium)", f"not measured ({why_no_browser})"))
    cold = ours.get("cold_ws")
    if isinstance(cold, tuple):
        first_s, first_run = cold
        rows.append(
            Row(
                "First chart after `streamlit run` (ws client, /heads as first visit)",
                f"{first_s:.1f} s (whole first run {first_run.latency_s:.1f} s; charts show: "
                f"{check_heads_tokens(first_run) or 'the sentence from the URL'})",
                target="≤ 8 s",
                met=verdict(first_s <= 8),
            )
        )
    elif cold is not None:
        rows.append(Row("First chart (ws client)", failed(cold)))
    # 2. Server work per rerun, every page; the peer beside the attention page.
    for page, title in pages():
        text, med = _work_cell(ours.get(f"work:{page}"))
        theirs = _work_cell(peer[f"work:{PEER.path}"])[0] if page == "heads" and peer else "—"
        rows.append(
            Row(
                f"Server work per rerun, {title}, {SHORT} tokens (send → script_finished, "
                "one visitor)",
                text,
                theirs,
                "≤ 50 ms median",
                verdict(med is not None and med <= 0.050),
            )
        )
    rows.append(
        Row(
            f"Server work per rerun, heads, {LONG} tokens",
            _work_cell(ours.get("work_long"))[0],
            _work_cell(peer["work_long"])[0] if peer else absent,
        )
    )
    # 3. Bytes per update; BertViz's head view is the target's peer.
    for n_tokens, key in ((SHORT, "work:heads"), (LONG, "work_long")):
        text, size = _bytes_cell(ours.get(key))
        theirs = _bytes_cell(peer.get(key if key == "work_long" else f"work:{PEER.path}"))[0]
        viz = bertviz.get(n_tokens)
        peer_text = f"BertViz head view {kb(viz)}" if viz else "BertViz: not measured"
        if peer:
            peer_text += f"; straightforward app {theirs}"
        ok = None if not viz or size is None else size <= viz / 8
        rows.append(
            Row(
                f"Bytes per update, heads, {n_tokens} tokens (ws payload, uncompressed)",
                text,
                peer_text,
                "≤ 1/8 of BertViz" if n_tokens == SHORT else "—",
                verdict(ok) if n_tokens == SHORT else "",
            )
        )
    # 4. Keystroke → chart.
    typed, theirs = ours.get("typing"), peer.get("typing")
    if typed is None:
        rows.append(Row("Keystroke → chart (Chromium)", f"not measured ({why_no_browser})"))
    for n_tokens, target, ok_fn in (
        (SHORT, "≤ 300 ms median / ≤ 600 ms p95", lambda m, p: m <= 0.3 and p <= 0.6),
        (LONG, "≤ 700 ms median", lambda m, p: m <= 0.7),
    ):
        if typed is None:
            break
        if not isinstance(typed, dict):
            rows.append(Row(f"Keystroke → chart, {n_tokens} tokens", failed(typed)))
            continue
        lat, errs = typed[n_tokens]
        med, p95 = median(lat), percentile(lat, 95)
        peer_cell = typing_text(*theirs[n_tokens]) if isinstance(theirs, dict) else absent
        rows.append(
            Row(
                f"Last keydown → token charts updated, attention page, {n_tokens} tokens "
                "(Chromium, one visitor, live pause included)",
                typing_text(lat, errs),
                peer_cell,
                target,
                verdict(None if med is None else ok_fn(med, p95) and not errs),
            )
        )
    # 5. Visitors at once.
    load, theirs = ours.get("load"), peer.get("load")
    title = f"{args.visitors} visitors × {args.sentences} sentences ({SHORT} tokens), "
    if not isinstance(load, LoadResult):
        rows.append(Row(title + "load", failed(load)))
    else:
        other = theirs if isinstance(theirs, LoadResult) else None
        rows += [
            Row(
                title + f"≤ {args.load_s:.0f} s: errors",
                load.errors,
                other.errors if other else absent,
                "0",
                verdict(load.ok_errors),
            ),
            Row(
                title + "rerun latency (answered reruns)",
                load.latency,
                other.latency if other else absent,
                "≤ 1 s median / ≤ 2 s p95",
                verdict(None if load.med is None else load.med <= 1 and load.p95 <= 2),
            ),
            Row(
                title + "server RSS peak (its worker processes included)",
                load.memory,
                other.memory if other else absent,
                "≤ 1.5 GB",
                verdict(load.peak <= 1.5e9),
            ),
        ]
    for pause_ms in args.live_pauses:
        live = ours.get(f"load_live:{pause_ms}")
        pause = f"live pause {pause_ms} ms" if pause_ms else f"the page's own live pause ({PAUSES})"
        what = (
            title + f"the last {LoadPlan.typed_keys} keys of each typed key by key "
            f"({LoadPlan.key_gap_s[0]:.2f}–{LoadPlan.key_gap_s[1]:.2f} s apart, on a fresh "
            f"server), {pause}: "
        )
        if not isinstance(live, LoadResult):
            rows.append(Row(what + "load", failed(live)))
            continue
        rows += [
            Row(what + "errors", live.errors, target="0", met=verdict(live.ok_errors)),
            Row(what + "last key → answer (live pause included)", live.latency),
        ]
    if gc_text is not None:
        rows.append(
            Row(
                f"Diagnosis: server work per rerun, heads, {SHORT} tokens, server started "
                "with `--runner.postScriptGC true` (Streamlit's default)",
                gc_text,
            )
        )


def add_flow_rows(rows: list[Row], flow: dict[str, float]) -> None:
    rows.append(
        Row(
            f"Gradient flow through time, T = {gradient_flow.STEPS}, hidden "
            f"{gradient_flow.HIDDEN}: ‖∂L/∂H_t‖ and ‖∂L/∂X_t‖ for RNN, LSTM, GRU and the "
            "Transformer together (in process, one torch thread, median of 7)",
            ms(flow["flows"]),
            target="≤ 300 ms",
            met=verdict(flow["flows"] <= 0.3),
        )
    )
    rows.append(
        Row(
            f"Step Jacobian spectra, T = {gradient_flow.STEPS}, RNN, LSTM and GRU together "
            "(reported separately)",
            ms(flow["spectra"]),
        )
    )


def table(rows: list[Row]) -> str:
    lines = ["| measure | SeqLens | peer | target | met |", "|---|---|---|---|---|"]
    for r in rows:
        cells = (r.measure, r.result, r.peer, r.target, r.met)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--no-browser", action="store_true", help="skip the Chromium measurements")
    p.add_argument("--n-work", type=int, default=20, help="fresh sentences per page (≥20)")
    p.add_argument("--n-long", type=int, default=6, help="fresh 128-token sentences")
    p.add_argument("--n-typing", type=int, default=10, help="typed sentences per length")
    p.add_argument("--visitors", type=int, default=40)
    p.add_argument(
        "--live-pauses",
        type=lambda text: [int(x) for x in text.split(",") if x],
        default=[0],
        help="live pauses (ms, comma-separated; 0: the page's own) for the load typed key "
        "by key; empty to skip",
    )
    p.add_argument("--sentences", type=int, default=5, help="sentences per visitor")
    p.add_argument("--load-s", type=float, default=60.0, help="the load's time limit")
    p.add_argument(
        "--no-peer",
        dest="peer",
        action="store_false",
        help="skip the peer (bench/peer/app.py, the attention app written the plain way)",
    )
    p.add_argument(
        "--no-gc-check",
        dest="gc_check",
        action="store_false",
        help="skip the heads reruns on a server with runner.postScriptGC on",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

    rows: list[Row] = []
    notes: list[str] = []
    try:
        facts = run(args, rows, notes)
        status = 0
    except Exception as exc:  # noqa: BLE001 - the table so far is still worth printing
        traceback.print_exc()
        facts, status = machine_facts("n/a"), 1
        notes.append(f"bench stopped early: {type(exc).__name__}: {exc}")
    out = "\n".join(
        [
            "## SeqLens bench",
            "",
            *[f"- {f}" for f in facts],
            "",
            table(rows),
            "",
            *[f"- {n}" for n in notes],
            "",
        ]
    )
    print(out)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "latest.md").write_text(out, encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
