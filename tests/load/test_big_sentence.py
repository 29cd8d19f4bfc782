"""A script's 8 MB sentence on a real server (127.0.0.1, started here): refused at the
websocket, and a long text that does get through reaches the page cut to what a box
takes, on that rerun and the later ones.

Correctness only; what such senders cost a bystander is `python -m bench.big_sentence`.
"""

from __future__ import annotations

import pytest

from bench.server import Server
from bench.wire import Session, run_async
from components.i18n import t
from models.text import MAX_CHARS, READ_CHARS

pytestmark = pytest.mark.slow

PAGE = "positional"
EIGHT_MB = 8 * 2**20
# Under the 1 MB a client may send at once, with the sentence twice in the message (the
# box's value and the link's query string), as the browser sends it.
LONG_CHARS = 400_000
ANSWER_S = 90.0


@pytest.fixture(scope="module")
def server(running_server):
    with running_server("streamlit-big-sentence-test") as srv:
        yield srv


def session(srv: Server) -> Session:
    return Session(srv.port, rerun_timeout_s=ANSWER_S, connect_timeout_s=ANSWER_S)


# 8 MB; and 0.75 MB, whose message (1.5 MB) only the widget-state limit refuses.
@pytest.mark.parametrize("chars", [EIGHT_MB, 750_000], ids=["8MB", "0.75MB"])
def test_a_sentence_of_megabytes_is_refused_by_the_server(server: Server, chars: int):
    async def scenario():
        async with session(server) as visitor:
            opened = await visitor.open_page(PAGE, "A short sentence first")
            huge = await visitor.type_sentence("word " * (chars // 5))
            return opened, huge

    opened, huge = run_async(scenario())
    assert opened.ok, opened.error
    # 1009: the websocket's "message too big".
    assert "1009" in huge.error, (huge.error, huge.alerts[:2])


def test_a_long_sentence_that_gets_through_is_cut_on_every_later_rerun(server: Server):
    at_least = t("note.truncated_chars_at_least", cap=MAX_CHARS, original=READ_CHARS)
    long_text = "word " * (LONG_CHARS // 5)

    async def scenario():
        async with session(server) as visitor:
            await visitor.open_page(PAGE, "A short sentence first")
            return [await visitor.type_sentence(long_text) for _ in range(2)]

    for rerun in run_async(scenario()):
        assert rerun.ok, rerun.error
        assert at_least in rerun.alerts, rerun.alerts[:3]
