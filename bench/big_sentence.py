"""`python -m bench.big_sentence`: what 8 MB sentences cost a bystander.

Starts `streamlit run app.py` on 127.0.0.1, times a bystander's home-page reruns alone,
then again while SENDERS sessions keep sending 8 MB sentences to the positional lesson
(each reconnects when the server closes its websocket), and prints both medians and
their ratio. Bounded: at most BYSTANDER_RERUNS reruns a phase, each within RERUN_S.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from bench.load import Session, run_async
from bench.sentences import SentenceMaker
from bench.server import RESULTS_DIR, Server

SENDERS = 4
EIGHT_MB = 8 * 2**20
SENDER_PAGE = "positional"
BYSTANDER_RERUNS = 20
RERUN_S = 60.0
# Between two bystander reruns: a visitor reading the page, not a tight loop.
BYSTANDER_PAUSE_S = 0.3


async def bystander_median(port: int, sentences: list[str]) -> float:
    """The median of a home-page visitor's reruns, one per sentence typed."""
    async with Session(port, rerun_timeout_s=RERUN_S, connect_timeout_s=RERUN_S) as visitor:
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


async def sender(port: int, stop: asyncio.Event, sent: list[str]) -> None:
    """Open the lesson, send an 8 MB sentence; again on a new connection when refused."""
    huge = "word " * (EIGHT_MB // 5)
    while not stop.is_set():
        async with Session(port, rerun_timeout_s=RERUN_S, connect_timeout_s=RERUN_S) as s:
            await s.open_page(SENDER_PAGE, "A short sentence first")
            while not stop.is_set():
                run = await s.type_sentence(huge)
                sent.append(run.error or "accepted")
                if run.error:
                    break


async def loaded_median(port: int, sentences: list[str]) -> tuple[float, list[str]]:
    stop, sent = asyncio.Event(), []
    senders = [asyncio.create_task(sender(port, stop, sent)) for _ in range(SENDERS)]
    await asyncio.sleep(2.0)  # the senders' first 8 MB messages are on their way
    try:
        return await bystander_median(port, sentences), sent
    finally:
        stop.set()
        await asyncio.gather(*senders, return_exceptions=True)


def main() -> None:
    mk = SentenceMaker()
    with Server(log_path=RESULTS_DIR / "streamlit-big-sentence.log") as server:
        server.wait_healthy()
        warm = [mk.make(12) for _ in range(3)]
        run_async(bystander_median(server.port, warm))
        unloaded = run_async(
            bystander_median(server.port, [mk.make(12) for _ in range(BYSTANDER_RERUNS + 1)])
        )
        started = time.monotonic()
        loaded, sent = run_async(
            loaded_median(server.port, [mk.make(12) for _ in range(BYSTANDER_RERUNS + 1)])
        )
        took = time.monotonic() - started
    refused = sum("1009" in outcome for outcome in sent)
    print(f"bystander home-page rerun, median of {BYSTANDER_RERUNS}:")
    print(f"  unloaded:                            {unloaded * 1000:7.1f} ms")
    print(f"  while {SENDERS} sessions send 8 MB sentences: {loaded * 1000:7.1f} ms")
    print(f"  ratio: {loaded / unloaded:.2f}x (target <= 3x)")
    print(f"  8 MB sentences sent: {len(sent)} in {took:.1f} s, refused (1009): {refused}")


if __name__ == "__main__":
    main()
