"""`python -m bench.big_sentence`: what 8 MB sentences cost a bystander.

Starts `streamlit run app.py` on 127.0.0.1, times a bystander's home-page reruns alone,
then again while SENDERS sessions keep sending 8 MB sentences to the positional lesson
(each reconnects when the server closes its websocket), and prints the medians and their
ratio to the unloaded one: for a bystander on the senders' own machine (127.0.0.1) and
for one on another (127.0.0.2, as a classmate's laptop is), and, to tell the sentence's
size from the reconnecting, for senders that reconnect as often with a short sentence.
The senders run in a process of their own and build their 8 MB message
once: the bystander's client must not wait for their encoding, only for the server.
Bounded: at most BYSTANDER_RERUNS reruns a phase, each within RERUN_S.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import time

import websockets
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.sentences import SentenceMaker
from bench.server import RESULTS_DIR, Server
from bench.wire import Session, run_async

SENDERS = 4
EIGHT_MB = 8 * 2**20
SENDER_PAGE = "positional"
BYSTANDER_RERUNS = 20
RERUN_S = 60.0
# Between two bystander reruns: a visitor reading the page, not a tight loop.
BYSTANDER_PAUSE_S = 0.3


async def bystander_median(port: int, sentences: list[str], source: str | None = None) -> float:
    """The median of a home-page visitor's reruns, one per sentence typed, from `source`."""
    session = Session(port, rerun_timeout_s=RERUN_S, connect_timeout_s=RERUN_S, source=source)
    async with session as visitor:
        opened = await visitor.open_page("", sentences[0])
        if not opened.ok:
            raise RuntimeError(f"the bystander's page did not open: {opened.error}")
        latencies = []
        for sentence in sentences[1:]:
            run = await visitor.type_sentence(sentence)
            if not run.ok:
                raise RuntimeError(f"a bystander's rerun failed: {run.error}")
            latencies.append(run.latency_s)
            await asyncio.sleep(BYSTANDER_PAUSE_S)
    return statistics.median(latencies)


async def sender(port: int, stop, sent: list[str], huge: bool) -> None:
    """Open the lesson, send an 8 MB sentence; again on a new connection when refused.
    Not `huge`: a short sentence, then a new connection all the same (the control)."""
    text = "word " * (EIGHT_MB // 5) if huge else "A short sentence then"
    built: dict[tuple[str, str], bytes] = {}  # the message, by (box id, page)
    while not stop.is_set():
        async with Session(port, rerun_timeout_s=RERUN_S, connect_timeout_s=RERUN_S) as s:
            await s.open_page(SENDER_PAGE, "A short sentence first")
            where = (s.sentence_widget_id or "", s.page_script_hash)
            if where not in built:
                built[where] = s._typed(text).SerializeToString()
            while not stop.is_set():
                try:
                    await s.ws.send(built[where])
                    await asyncio.wait_for(rerun_finished(s), RERUN_S)
                    sent.append("accepted")
                    if not huge:
                        break  # reconnect, as the refused senders must
                except websockets.ConnectionClosed as closed:
                    sent.append(f"closed {closed.rcvd.code if closed.rcvd else ''}")
                    break
                except TimeoutError:
                    sent.append("unanswered")
                    break


async def rerun_finished(session: Session) -> None:
    """Read until the server says the rerun the message asked for has finished."""
    while True:
        message = ForwardMsg()
        message.ParseFromString(await session.ws.recv())
        if message.WhichOneof("type") == "script_finished" and (
            message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
        ):
            return


def senders_process(port: int, stop, counts, huge: bool) -> None:
    """SENDERS senders in this process until `stop` is set; what each send met, counted."""

    async def main() -> None:
        sent: list[str] = []
        done = asyncio.Event()
        tasks = [asyncio.create_task(sender(port, done, sent, huge)) for _ in range(SENDERS)]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        done.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        counts.put(sent)

    asyncio.run(main())


def loaded_median(
    port: int, sentences: list[str], huge: bool = True, source: str | None = None
) -> tuple[float, list[str]]:
    spawn = multiprocessing.get_context("spawn")
    stop, counts = spawn.Event(), spawn.Queue()
    process = spawn.Process(target=senders_process, args=(port, stop, counts, huge), daemon=True)
    process.start()
    try:
        time.sleep(5.0)  # the senders' process starts and their first messages go out
        median = run_async(bystander_median(port, sentences, source))
    finally:
        stop.set()
    sent = counts.get(timeout=RERUN_S)
    process.join(timeout=RERUN_S)
    if process.is_alive():
        process.kill()
    return median, sent


# (what the senders send, where the bystander is): the phases measured under load.
PHASES = (
    ("8 MB sentences, bystander on the senders' machine", True, None),
    ("8 MB sentences, bystander on another machine", True, "127.0.0.2"),
    ("short sentences, reconnecting as often (control)", False, None),
)


def main() -> None:
    mk = SentenceMaker()

    def sentences() -> list[str]:
        return [mk.make(12) for _ in range(BYSTANDER_RERUNS + 1)]

    rows = []
    with Server(log_path=RESULTS_DIR / "streamlit-big-sentence.log") as server:
        server.wait_healthy()
        run_async(bystander_median(server.port, [mk.make(12) for _ in range(3)]))  # warm
        unloaded = run_async(bystander_median(server.port, sentences()))
        for name, huge, source in PHASES:
            started = time.monotonic()
            loaded, sent = loaded_median(server.port, sentences(), huge, source)
            rows.append((name, loaded, sent, time.monotonic() - started))
    print(f"bystander home-page rerun, median of {BYSTANDER_RERUNS}; {SENDERS} senders")
    print(f"  unloaded: {unloaded * 1000:.1f} ms")
    for name, loaded, sent, took in rows:
        refused = sum(outcome == "closed 1009" for outcome in sent)
        print(
            f"  {name}: {loaded * 1000:.1f} ms, {loaded / unloaded:.2f}x (target <= 3x); "
            f"{len(sent)} sent in {took:.1f} s, refused (1009): {refused}"
        )


if __name__ == "__main__":
    main()
