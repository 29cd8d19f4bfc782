"""The table: a row a measure, with its target and whether it was met, and the facts of
the machine above it."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from importlib import metadata

from bench import gradient_flow
from bench.apps import LONG, PEER, SHORT
from bench.checks import check_heads_tokens
from bench.figures import failed, kb, median, ms, percentile, verdict
from bench.keystrokes import typing_text
from bench.load import LoadPlan
from bench.pages import TOUR_QUERY, pages, summarize_work
from bench.visitors import LoadResult
from components.ui.inputs import BUSY_PAUSE_MS, SENTENCE_PAUSES_MS


@dataclass
class Row:
    measure: str
    result: str  # SeqLens
    peer: str = "—"  # the same figure for the peer, measured in the same run
    target: str = "—"
    met: str = ""


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


PAUSES = (
    ", ".join(f"{ms} ms up to {most} visitors" for most, ms in SENTENCE_PAUSES_MS)
    + f", {BUSY_PAUSE_MS} ms beyond"
)


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
    tour = ours.get("typing:tour")
    if isinstance(tour, dict) and tour[SHORT][0]:
        lat, errs = tour[SHORT]
        med, p95 = median(lat), percentile(lat, 95)
        rows.append(
            Row(
                f"Last keydown → token charts updated, attention page with its tour open "
                f"(?{TOUR_QUERY}), {SHORT} tokens (Chromium, one visitor, live pause included)",
                typing_text(lat, errs),
                "—",
                "≤ 300 ms median / ≤ 600 ms p95",
                verdict(med <= 0.3 and p95 <= 0.6 and not errs),
            )
        )
    elif tour is not None:
        rows.append(Row("Keystroke → chart, tour open", failed(tour)))
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


def _mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:.0f} MB"


def add_class_rows(rows: list[Row], room, guesses) -> None:
    """The class room (bench/classroom.py) and the room-code guessing (bench/guessing.py)."""
    from bench.guessing import chance_of_a_hit

    if isinstance(room, Exception):
        rows.append(Row("Class room, 1 teacher + students following", failed(room)))
    else:
        title = f"Class room, 1 teacher + {room.students} students following"
        lat = room.latencies
        med, p95 = median(lat), percentile(lat, 95)
        n = room.students * room.changes
        rows += [
            Row(
                f"{title}: follow latency median/p95 (n={n}; teacher's run finished → "
                "student's page showing the new layer)",
                f"{ms(med)} / {ms(p95)} ({len(lat)} seen, {len(room.missed)} missed; "
                f"{len(room.stalled)} students' pages no longer pulsing after the changes)",
                target="≤ 2 s p95",
                met=verdict(None if p95 is None else p95 <= 2 and not room.missed),
            ),
            Row(
                f"{title}: answers tallied",
                f"{room.tally_seen} for {room.tally_expected} given; verdict reached "
                f"{room.verdicts} of {room.students}",
                target="exact",
                met=verdict(room.answers_tallied and room.verdicts == room.students),
            ),
            Row(
                f"{title}: errors", str(len(room.errors)), target="0", met=verdict(not room.errors)
            ),
            Row(
                f"{title}: server RSS before/after (after a warm-up wave / room ended, "
                "every tab closed)",
                f"{_mb(room.rss_before)} / {_mb(room.rss_after)} (outside caches "
                f"{_mb(room.outside_caches_before)} / {_mb(room.outside_caches_after)})",
                target="after ≤ before + 10 %",
                met=verdict(
                    None
                    if not room.rss_before or not room.rss_after
                    else room.rss_after <= room.rss_before * 1.1
                ),
            ),
        ]
    if isinstance(guesses, Exception):
        rows.append(Row("Room-code guessing", failed(guesses)))
        return
    hit = chance_of_a_hit(guesses.per_s)
    rows.append(
        Row(
            f"Room-code guessing, {guesses.sessions} sessions typing wrong codes: wrong codes "
            "answered per second server-wide",
            f"{guesses.per_s:.2f}/s ({guesses.answered} in {guesses.elapsed_s:.1f} s; "
            f"{len(guesses.errors)} errors); at this rate for a room's 3 h, the chance of "
            f"finding any of 20 live rooms is {hit:.2%}",
            target="≤ 2/s",
            met=verdict(guesses.per_s <= 2.05 and not guesses.errors),
        )
    )
