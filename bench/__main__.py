"""`python -m bench`: SeqLens's performance, measured on this machine, as one markdown table.

Starts `streamlit run app.py` itself on 127.0.0.1 (a fresh server for each cold-start
figure), drives it with the websocket client in bench/load.py and, when playwright and
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

from bench import bertviz_size, browser
from bench.load import (
    LoadPlan,
    Rerun,
    Session,
    check_heads_tokens,
    check_words_shown,
    percentile,
    run_async,
    run_load,
)
from bench.sentences import SentenceMaker, chart_labels, minilm_tokens
from bench.server import RESULTS_DIR, RssSampler, Server, active_sessions

SHORT, LONG = 20, 128  # tokens, [CLS] and [SEP] included


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
    result: str
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


def ws_first_chart(mk: SentenceMaker) -> tuple[Server, float, Rerun]:
    """A fresh server; its first visitor deep-links /heads. Returns the still-running server."""
    srv = Server().start()
    try:
        srv.wait_healthy()

        async def go() -> Rerun:
            async with Session(srv.port, rerun_timeout_s=120) as s:
                return await s.open_page("heads", mk.make(SHORT))

        run = run_async(go())
        if run.first_chart_s is None:
            raise RuntimeError(f"no chart in the first run: {run.error or 'none drawn'}")
        return srv, run.sent_at + run.first_chart_s - srv.started_at, run
    except BaseException:
        srv.stop()
        raise


def server_work(port: int, page: str, n: int, mk: SentenceMaker, n_tokens: int) -> list[Rerun]:
    """One visitor on `page`: a warm-up run, then `n` fresh sentences one after another."""

    async def go() -> list[Rerun]:
        runs = []
        async with Session(port, rerun_timeout_s=60) as s:
            warm = await s.open_page(page, mk.make(SHORT))
            if not warm.ok:
                raise RuntimeError(f"{page or 'home'}: {warm.error}")
            for _ in range(n):
                await asyncio.sleep(0.2)
                run = await s.type_sentence(mk.make(n_tokens))
                if run.ok and page == "heads":
                    run.error = check_heads_tokens(run)
                elif run.ok and page:
                    run.error = check_words_shown(run)
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
    b: browser.Browser, base_url: str, mk: SentenceMaker, n_short: int, n_long: int
) -> dict[int, tuple[list[float], list[str]]]:
    s0 = mk.make(SHORT)
    tb = browser.TypingBench(b, base_url, s0, chart_labels(minilm_tokens(s0)))
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
                    tb = browser.TypingBench(b, base_url, s0, chart_labels(minilm_tokens(s0)))
                    prev = s0
    finally:
        tb.close()
    return out


# --------------------------------------------------------------------------- main


def run(args: argparse.Namespace, rows: list[Row], notes: list[str]) -> list[str]:
    """Measure everything, appending to `rows` as it goes; returns the machine facts."""
    mk = SentenceMaker()
    heads_runs: list[Rerun] = []
    long_runs: list[Rerun] = []
    why_no_browser = "disabled (--no-browser)" if args.no_browser else browser.available()
    chromium_version = f"not used: {why_no_browser}" if why_no_browser else ""
    br = None
    if not why_no_browser:
        br = browser.Browser().__enter__()
        chromium_version = f"Chromium {br.chromium.version} (headless, {browser.CHROMIUM})"
    t_start = time.monotonic()
    try:
        log("cold start, headless Chromium")
        # 1. Cold start in the browser: a fresh server, a deep link as its first visit.
        if br is not None:
            try:
                with Server() as srv:
                    srv.wait_healthy()
                    s = browser.first_chart_s(br, srv.base_url, srv.started_at, mk.make(SHORT))
                rows.append(
                    Row(
                        "First chart after `streamlit run` (headless Chromium, deep link "
                        "/heads?sentence=… as first visit)",
                        f"{s:.1f} s",
                        "≤ 8 s",
                        verdict(s <= 8),
                    )
                )
            except Exception as exc:  # noqa: BLE001
                rows.append(Row("First chart (Chromium)", f"failed: {exc}", "≤ 8 s", "**no**"))
        else:
            rows.append(Row("First chart (Chromium)", f"not measured ({why_no_browser})"))

        log("cold start, websocket client")
        # 2. Cold start over the websocket; this server then serves everything else.
        srv, first_s, first_run = ws_first_chart(mk)
        try:
            rows.append(
                Row(
                    "First chart after `streamlit run` (ws client, /heads as first visit)",
                    f"{first_s:.1f} s (whole first run {first_run.latency_s:.1f} s; "
                    f"charts show: {check_heads_tokens(first_run) or 'the sentence from the URL'})",
                    "≤ 8 s",
                    verdict(first_s <= 8),
                )
            )

            log("server work per rerun")
            # 3. Server work per rerun, one visitor, fresh sentences.
            for page, title in pages():
                try:
                    runs = server_work(srv.port, page, args.n_work, mk, SHORT)
                except Exception as exc:  # noqa: BLE001
                    rows.append(Row(f"Server work per rerun, {title}", f"failed: {exc}"))
                    continue
                if page == "heads":
                    heads_runs = runs
                text, med = summarize_work(runs)
                rows.append(
                    Row(
                        f"Server work per rerun, {title}, {SHORT} tokens (send → "
                        "script_finished, one visitor)",
                        text,
                        "≤ 50 ms median",
                        verdict(med is not None and med <= 0.050),
                    )
                )
            long_runs = server_work(srv.port, "heads", args.n_long, mk, LONG)
            text, _ = summarize_work(long_runs)
            rows.append(Row(f"Server work per rerun, heads, {LONG} tokens", text))

            # 4. Bytes per update (websocket payload of one rerun, heads page).
            for n_tokens, runs in ((SHORT, heads_runs), (LONG, long_runs)):
                sizes = [r.bytes for r in runs if r.ok]
                keys = sorted({k for r in runs for k in r.charts})
                parts = ", ".join(
                    f"{k} {kb(median([len(r.charts[k]) for r in runs if k in r.charts]))}"
                    for k in keys
                )
                rows.append(
                    Row(
                        f"Bytes per update, heads, {n_tokens} tokens (ws payload, uncompressed)",
                        f"median {kb(median(sizes))} (n={len(sizes)}; chart specs: {parts})",
                    )
                )

            log("keystroke → chart in Chromium")
            # 5. Keystroke → chart in the browser.
            if br is not None:
                try:
                    typed = typing_runs(br, srv.base_url, mk, args.n_typing, args.n_typing)
                except Exception as exc:  # noqa: BLE001
                    typed = None
                    rows.append(Row("Keystroke → chart (Chromium)", f"failed: {exc}"))
                if typed is not None:
                    for n_tokens, target, ok_fn in (
                        (
                            SHORT,
                            "≤ 300 ms median / ≤ 600 ms p95",
                            lambda m, p: m <= 0.3 and p <= 0.6,
                        ),
                        (LONG, "≤ 700 ms median", lambda m, p: m <= 0.7),
                    ):
                        lat, errs = typed[n_tokens]
                        med, p95 = median(lat), percentile(lat, 95)
                        text = f"median {ms(med)}, p95 {ms(p95)} (n={len(lat)})"
                        if errs:
                            text += f"; {len(errs)} failed: {errs[0]}"
                        rows.append(
                            Row(
                                f"Last keydown → token charts updated, /heads, {n_tokens} "
                                "tokens (Chromium)",
                                text,
                                target,
                                verdict(None if med is None else ok_fn(med, p95) and not errs),
                            )
                        )
            else:
                rows.append(Row("Keystroke → chart (Chromium)", f"not measured ({why_no_browser})"))

            log("load: visitors at once")
            # 6. Forty visitors at once.
            if br is not None:
                br.__exit__(None, None, None)  # free its memory and CPU for the load
                br = None
            sentences = [
                [mk.make(SHORT) for _ in range(args.sentences)] for _ in range(args.visitors)
            ]
            # A browser waits for its rerun however long it takes: only the limit cuts.
            plan = LoadPlan(
                page="heads",
                send_window_s=args.load_s,
                hard_limit_s=args.load_s,
                rerun_timeout_s=args.load_s,
            )
            rss_before = srv.rss()
            with RssSampler(srv.pid) as sampler:
                report = run_load(srv.port, sentences, plan)
            time.sleep(2)
            lat = report.latencies
            errors = report.errors
            med, p95 = median(lat), percentile(lat, 95)
            err_text = f"{len(errors)}"
            if errors:
                kinds: dict[str, int] = {}
                for e in errors:
                    kind = e.split(": ", 1)[1][:60] if ": " in e else e
                    kinds[kind] = kinds.get(kind, 0) + 1
                err_text += " (" + "; ".join(f"{n}× {k}" for k, n in kinds.items()) + ")"
            title = f"{args.visitors} visitors × {args.sentences} sentences ({SHORT} tokens), "
            rows.append(
                Row(
                    title + f"≤ {args.load_s:.0f} s: errors",
                    f"{err_text}; {report.completed} of {report.planned} reruns done, "
                    f"{report.not_sent} never sent (window closed); wall {report.wall_s:.0f} s",
                    "0",
                    verdict(not errors and report.not_sent == 0),
                )
            )
            rows.append(
                Row(
                    title + "rerun latency (answered reruns)",
                    f"median {ms(med)}, p95 {ms(p95)} (n={len(lat)})",
                    "≤ 1 s median / ≤ 2 s p95",
                    verdict(None if med is None else med <= 1 and p95 <= 2),
                )
            )
            peak = max(sampler.peak, rss_before or 0)
            rows.append(
                Row(
                    title + "server RSS peak",
                    f"{kb(peak)} (before the load {kb(rss_before)}; after {kb(srv.rss())}; "
                    f"active sessions after: {active_sessions(srv.port)})",
                    "≤ 1.5 GB",
                    verdict(peak <= 1.5e9),
                )
            )
        finally:
            srv.stop()

        # 7. Diagnosis: the same heads reruns with Streamlit's post-run gc.collect(2) off
        # (a command-line config flag; the app is unchanged).
        if args.gc_check:
            log("server work with runner.postScriptGC off")
            try:
                with Server(extra_args=("--runner.postScriptGC", "false")) as gc_srv:
                    gc_srv.wait_healthy()
                    runs = server_work(gc_srv.port, "heads", args.n_work, mk, SHORT)
                text, _ = summarize_work(runs)
                rows.append(
                    Row(
                        f"Diagnosis: server work per rerun, heads, {SHORT} tokens, server "
                        "started with `--runner.postScriptGC false`",
                        text,
                    )
                )
            except Exception as exc:  # noqa: BLE001
                rows.append(Row("Diagnosis: postScriptGC off", f"failed: {exc}"))

        # 8. BertViz's head view for the same sentences, same model.
        log("BertViz head view size")
        if bertviz_size.available():
            for n_tokens, runs in ((SHORT, heads_runs), (LONG, long_runs)):
                sentence = next((r.sentence for r in runs if r.ok), mk.make(n_tokens))
                size, n = bertviz_size.head_view_bytes(sentence)
                rows.append(Row(f"BertViz head_view HTML, same sentence ({n} tokens)", kb(size)))
        else:
            rows.append(Row("BertViz head_view HTML", "not measured (bertviz not installed)"))
    finally:
        if br is not None:
            br.__exit__(None, None, None)
        notes.append(f"bench wall time: {time.monotonic() - t_start:.0f} s")
    return machine_facts(chromium_version)


def table(rows: list[Row]) -> str:
    lines = ["| measure | result | target | met |", "|---|---|---|---|"]
    for r in rows:
        cells = (r.measure, r.result, r.target, r.met)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--no-browser", action="store_true", help="skip the Chromium measurements")
    p.add_argument("--n-work", type=int, default=20, help="fresh sentences per page (≥20)")
    p.add_argument("--n-long", type=int, default=6, help="fresh 128-token sentences")
    p.add_argument("--n-typing", type=int, default=10, help="typed sentences per length")
    p.add_argument("--visitors", type=int, default=40)
    p.add_argument("--sentences", type=int, default=5, help="sentences per visitor")
    p.add_argument("--load-s", type=float, default=60.0, help="the load's time limit")
    p.add_argument(
        "--no-gc-check",
        dest="gc_check",
        action="store_false",
        help="skip the heads reruns on a server with runner.postScriptGC off",
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
