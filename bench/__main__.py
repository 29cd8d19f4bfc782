"""`python -m bench`: SeqLens's performance, measured on this machine, as one markdown table.

Starts `streamlit run app.py` itself on 127.0.0.1 (a fresh server for each cold-start
figure), drives it with the websocket client in bench/wire.py and, when playwright and
Chromium are there, with headless Chromium; stops every server it started, even on error.
Bounded: each phase has its own time limit; the whole run takes about 4-5 minutes, and the
class room with the room-code guessing (bench/classroom.py) up to 4 more (`--no-class`).
The table also goes to bench/results/latest.md (git-ignored).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

from bench import browser, classroom, gradient_flow
from bench.apps import PEER, SEQLENS
from bench.phases import bertviz_sizes, gc_diagnosis, log, measure_app
from bench.report import Row, add_class_rows, add_flow_rows, add_rows, machine_facts, table
from bench.sentences import SentenceMaker
from bench.server import RESULTS_DIR


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
        room_and_guesses = _class_room(args)
    finally:
        if br is not None:
            br.__exit__(None, None, None)
        notes.append(f"bench wall time: {time.monotonic() - t_start:.0f} s")
    add_rows(rows, ours, peer, bertviz, gc_text, args, why_no_browser)
    add_flow_rows(rows, flow)
    if room_and_guesses is not None:
        add_class_rows(rows, *room_and_guesses)
    return machine_facts(chromium_version)


def _class_room(args: argparse.Namespace):
    """The class room and the room-code guessing (bench/classroom.py), each on a server of
    its own; None when skipped."""
    if not args.class_room:
        return None
    log("class room: 1 teacher + students following, then room-code guessing")
    try:
        return classroom.measure()
    except Exception as exc:  # noqa: BLE001 - the row says it failed
        return exc, exc


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
    p.add_argument(
        "--no-class",
        dest="class_room",
        action="store_false",
        help="skip the class room (1 teacher + 60 students) and the room-code guessing",
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
