"""A small client for Streamlit's websocket protocol (the load in bench/load.py uses it).

What the browser does, and this client copies (Streamlit 1.67, read from
web/server/starlette/starlette_websocket.py, runtime/app_session.py and the frontend):

1. GET /_stcore/health: the answer sets the `_streamlit_xsrf` cookie.
2. Open ws://127.0.0.1:PORT/_stcore/stream with subprotocols ["streamlit", <xsrf cookie
   value>] (the second entry is the XSRF token the server compares with the cookie),
   the cookie itself, and Origin http://127.0.0.1:PORT. The Host header must be one of
   server.allowedHosts and Origin must match it, or the server closes with 1008.
3. The server does not run the script on connect: the client sends BackMsg.rerun_script
   (a ClientState). First visit: page_name = the URL path ("heads") and query_string
   ("sentence=…"): a widget bound to the URL is seeded from it. Later runs: the page's
   page_script_hash (from ForwardMsg.navigation) and the widget states; the text box
   is the WidgetState whose id is the one in the text_input delta with
   query_param_key "sentence" (a visitor typing). Other widgets keep their values.
4. ForwardMsgs come back (new_session, deltas, …) until script_finished. Status
   FINISHED_EARLY_FOR_RERUN means a newer rerun replaced this one: keep reading.
   Like the browser, the client keeps every message the server marks cacheable (an
   element of more than `global.minCachedMessageSize`, 10 kB) and lists the ones it
   keeps in each rerun request (ClientState.cached_message_hashes): the server then
   sends such an element again as a ref_hash, read from the cache; only the bytes
   received count. (The browser forgets a message unused for more than
   `global.maxCachedMessageAge` complete runs; the client forgets none, which changes
   nothing here: the sentences never repeat, and what recurs on every run, the grid
   charts' renderer, is used on every run.) A ref_hash the client does not hold is an
   error.

Only 127.0.0.1 is ever contacted; the port is the only choice.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from urllib.parse import urlencode

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.checks import check_heads_tokens
from bench.rerun import MessageCache, Rerun, chart_key
from bench.server import HOST, http_get

SENTENCE_KEY = "sentence"
RERUN_TIMEOUT_S = 30.0
# The browser gives up on a websocket that has not opened after 15 s (and retries).
CONNECT_TIMEOUT_S = 15.0
# The component that draws grid charts (components/ui/charts.py).
GRID_CHART = "seqlens_grid"


def commit_schedule(gaps_s: list[float], pause_s: float) -> list[tuple[float, int]]:
    """When a live text box commits, as the browser's debounce does: (seconds after the
    first key, keys typed by then). Key i+1 follows key i by gaps_s[i]; a commit fires
    `pause_s` after a key that no other key followed within `pause_s`."""
    commits, at = [], 0.0
    for typed, gap in enumerate([*gaps_s, float("inf")], start=1):
        if gap > pause_s:
            commits.append((at + pause_s, typed))
        at += gap
    return commits


def _error_message() -> str:
    from components.i18n import t

    return t("app.error")


class Session:
    """One visitor: a websocket session with the app. Use `async with Session(port)`."""

    def __init__(
        self,
        port: int,
        rerun_timeout_s: float = RERUN_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        source: str | None = None,
    ):
        self.port = int(port)
        # The loopback address the websocket leaves from (127.0.0.2 is another client to
        # the server); None: the system's choice, 127.0.0.1.
        self.source = source
        self.rerun_timeout_s = rerun_timeout_s
        # Why a wait was cut short, when not by the rerun timeout (e.g. a load's limit).
        self.cut_reason = ""
        self.connect_timeout_s = connect_timeout_s
        self.ws = None
        self.unanswered = False
        self.page_script_hash = ""
        self.sentence_widget_id: str | None = None
        # The sentence box's live pause as the page last sent it (seconds), if any.
        self.live_pause_s: float | None = None
        self.query: dict[str, str] = {}
        self.cache = MessageCache()
        self._app_error = _error_message()
        self.connected_at = 0.0
        self.fragment_id = ""  # the fragment the page asked to rerun on a timer, if any

    async def __aenter__(self) -> Session:
        await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def connect(self) -> None:
        _, headers, _ = await asyncio.to_thread(
            http_get, self.port, "_stcore/health", self.connect_timeout_s
        )
        cookie = ""
        for name, value in headers.items():
            if name.lower() == "set-cookie" and value.startswith("_streamlit_xsrf="):
                cookie = value.split(";", 1)[0]
        token = cookie.split("=", 1)[1] if cookie else ""
        origin = f"http://{HOST}:{self.port}"
        self.ws = await websockets.connect(
            f"ws://{HOST}:{self.port}/_stcore/stream",
            subprotocols=["streamlit", token] if token else ["streamlit"],
            origin=origin,
            additional_headers={"Cookie": cookie} if cookie else None,
            compression=None,  # the server has websocket compression off by default
            max_size=None,
            open_timeout=self.connect_timeout_s,
            ping_interval=None,
            local_addr=(self.source, 0) if self.source else None,
        )
        self.connected_at = time.monotonic()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    # ------------------------------------------------------------------ reruns

    async def open_page(self, page: str, sentence: str | None = None, **query: str) -> Rerun:
        """The first visit to /page?sentence=…: the URL seeds the shared sentence box."""
        self.query = dict(query)
        if sentence is not None:
            self.query[SENTENCE_KEY] = sentence
        msg = BackMsg()
        msg.rerun_script.query_string = urlencode(self.query)
        msg.rerun_script.page_name = page
        msg.rerun_script.cached_message_hashes.extend(self.cache.hashes())
        return await self._rerun(msg, sentence or "")

    async def type_sentence(self, sentence: str) -> Rerun:
        """What the browser sends when the visitor has typed `sentence` in the box."""
        if self.sentence_widget_id is None:
            raise RuntimeError("open a page first: the sentence box's id is not known yet")
        return await self._rerun(self._typed(sentence), sentence)

    async def type_live(
        self, sentence: str, typed_from: int, gaps_s: list[float], pause_s: float
    ) -> Rerun:
        """The visitor types sentence[typed_from:] key by key into a box holding
        sentence[:typed_from], with `gaps_s` between keys, and the box commits after
        `pause_s` without a key (Streamlit's `live`). Every commit is sent when the
        browser would send it, answered or not (the server cuts a run short for a newer
        one); the Rerun returned is the first complete run that shows the whole
        sentence. A run answering a shorter text is read and set aside."""
        keys = len(sentence) - typed_from
        if len(gaps_s) != keys - 1:
            raise ValueError(f"{keys} keys need {keys - 1} gaps, got {len(gaps_s)}")
        run = Rerun(sentence=sentence)
        if self.ws is None or self.unanswered or self.sentence_widget_id is None:
            run.error = "not connected" if self.ws is None else "not ready to type"
            return run
        started = time.monotonic()
        last_key = started + sum(gaps_s)
        answer = asyncio.create_task(self._answer_for(sentence, run))
        try:
            for at, typed in commit_schedule(gaps_s, pause_s):
                await asyncio.sleep(max(0.0, started + at - time.monotonic()))
                run.sent_at = time.monotonic()
                run.commits += 1
                await self.ws.send(self._typed(sentence[: typed_from + typed]).SerializeToString())
            await asyncio.wait_for(asyncio.shield(answer), self.rerun_timeout_s)
            if not run.error:
                run.last_key_s = run.sent_at + run.latency_s - last_key
        except TimeoutError:
            self.unanswered = True
            run.error = self.cut_reason or f"no answer within {self.rerun_timeout_s:.0f} s"
        except websockets.ConnectionClosed as exc:
            run.error = f"connection closed: {exc}"
        finally:
            answer.cancel()
        return run

    def _typed(self, text: str) -> BackMsg:
        """The rerun a browser asks for when the sentence box holds `text`."""
        self.query[SENTENCE_KEY] = text
        msg = BackMsg()
        msg.rerun_script.query_string = urlencode(self.query)
        msg.rerun_script.page_script_hash = self.page_script_hash
        widget = msg.rerun_script.widget_states.widgets.add()
        widget.id = self.sentence_widget_id
        widget.string_value = text
        msg.rerun_script.cached_message_hashes.extend(self.cache.hashes())
        return msg

    async def _answer_for(self, sentence: str, final: Rerun) -> None:
        """Read runs until one shows `sentence` on its token charts; fill `final` with it."""
        while True:
            run = Rerun(sentence=sentence, sent_at=final.sent_at)
            await self._read_run(run)
            if run.error or not check_heads_tokens(run):
                final.latency_s = time.monotonic() - final.sent_at
                for name in ("bytes", "messages", "error", "charts", "texts", "alerts"):
                    setattr(final, name, getattr(run, name))
                return

    async def _rerun(self, msg: BackMsg, sentence: str) -> Rerun:
        run = Rerun(sentence=sentence)
        if self.ws is None or self.unanswered:
            # After an unanswered rerun its late messages would be read as the next one's.
            run.error = "not connected" if self.ws is None else "an earlier rerun is unanswered"
            return run
        run.sent_at = time.monotonic()
        try:
            await self.ws.send(msg.SerializeToString())
            await asyncio.wait_for(self._read_run(run), self.rerun_timeout_s)
        except TimeoutError:
            self.unanswered = True
            run.error = self.cut_reason or (
                f"no script_finished within {self.rerun_timeout_s:.0f} s"
            )
        except websockets.ConnectionClosed as exc:
            run.error = f"connection closed: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported, never hidden
            run.error = f"{type(exc).__name__}: {exc}"
        return run

    async def _read_run(self, run: Rerun) -> None:
        while True:
            data = await self.ws.recv()
            now = time.monotonic()
            run.bytes += len(data)
            run.messages += 1
            fwd, kind, missing = forward_message(self.cache, data)
            if missing:
                run.error = run.error or f"ref_hash {missing}: not in the cache"
                continue
            self.cache.keep(fwd)
            if kind == "script_finished":
                status = fwd.script_finished
                if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue  # a newer run replaced this one; its finish follows
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    run.error = run.error or "script compile error"
                run.latency_s = now - run.sent_at
                return
            if kind == "auto_rerun":
                self.fragment_id = fwd.auto_rerun.fragment_id
            elif kind == "navigation":
                if fwd.navigation.page_script_hash:
                    self.page_script_hash = fwd.navigation.page_script_hash
            elif kind == "page_not_found":
                run.error = run.error or f"page not found: {fwd.page_not_found.page_name}"
            elif kind == "session_event":
                event = fwd.session_event.WhichOneof("type")
                if event in ("script_compilation_exception",):
                    run.error = run.error or f"session event {event}"
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                run.last_element_s = now - run.sent_at
                self._element(fwd.delta.new_element, run, now)

    def _element(self, el, run: Rerun, now: float) -> None:
        kind = el.WhichOneof("type")
        grid = kind == "bidi_component" and el.bidi_component.component_name == GRID_CHART
        if kind == "plotly_chart" or grid:
            if run.first_chart_s is None:
                run.first_chart_s = now - run.sent_at
            chart = el.bidi_component if grid else el.plotly_chart
            run.charts[chart_key(chart.id)] = chart.bytes.decode() if grid else chart.spec
        elif kind == "text_input" and el.text_input.query_param_key == SENTENCE_KEY:
            self.sentence_widget_id = el.text_input.id
            if el.text_input.HasField("live_debounce_ms"):
                self.live_pause_s = el.text_input.live_debounce_ms / 1000.0
        elif kind == "text":
            run.texts.append(el.text.body)
        elif kind == "alert":
            run.alerts.append(el.alert.body)
            if el.alert.body == self._app_error:
                run.error = run.error or "the page showed the app's error message"
        elif kind == "exception":
            run.error = run.error or f"exception: {el.exception.type}: {el.exception.message}"


def forward_message(cache: MessageCache, data: bytes) -> tuple[ForwardMsg, str, str]:
    """A message from the server and its kind, one sent by reference taken from `cache`;
    the reference's hash as the third item when the cache does not hold it."""
    fwd = ForwardMsg()
    fwd.ParseFromString(data)
    kind = fwd.WhichOneof("type")
    if kind != "ref_hash":
        return fwd, kind, ""
    cached = cache.find(fwd.ref_hash)
    if cached is None:
        return fwd, kind, fwd.ref_hash
    return cached, cached.WhichOneof("type"), ""


def run_async(coro):
    """asyncio.run(coro) in a thread of its own: works beside playwright's sync API,
    which keeps an event loop running in the calling thread."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
