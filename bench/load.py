"""A small client for Streamlit's websocket protocol, and a bounded many-visitor load.

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
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.server import HOST, http_get

SENTENCE_KEY = "sentence"
RERUN_TIMEOUT_S = 30.0
# The browser gives up on a websocket that has not opened after 15 s (and retries).
CONNECT_TIMEOUT_S = 15.0
# Chart keys on the heads page whose x axis is the sentence's token labels.
TOKEN_CHART_KEYS = ("one_head", "focus")
# The component that draws grid charts (components/ui/charts.py).
GRID_CHART = "seqlens_grid"


@dataclass
class Rerun:
    """One script run as a client saw it."""

    sentence: str
    sent_at: float = 0.0
    latency_s: float | None = None  # send → script_finished
    first_chart_s: float | None = None  # send → first chart delta (plotly or grid)
    last_element_s: float | None = None  # send → last element drawn (~ the script's end)
    bytes: int = 0  # websocket payload bytes received for this run
    messages: int = 0
    error: str = ""
    # Typed key by key (Session.type_live): last key → the answer for the whole sentence,
    # live pause included, and how many commits the pauses between keys sent.
    last_key_s: float | None = None
    commits: int = 0
    charts: dict[str, str] = field(default_factory=dict)  # chart key → its spec's JSON
    texts: list[str] = field(default_factory=list)  # st.text bodies
    alerts: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error and self.latency_s is not None

    def chart_x(self, key: str) -> list[str] | None:
        """A chart's column labels (token labels on the heads page): a grid chart's first
        panel's (components/grid.py), a plotly chart's first trace's x values."""
        spec = self.charts.get(key)
        if spec is None:
            return None
        spec = json.loads(spec)
        if "panels" in spec:
            return list(spec["panels"][0]["columns"])
        x = (spec.get("data") or [{}])[0].get("x")
        return list(x) if isinstance(x, list) else None


def chart_key(element_id: str) -> str:
    """`$$ID-<hash>-one_head` → `one_head` (the key the page gave st.plotly_chart)."""
    parts = element_id.split("-", 2)
    return parts[2] if len(parts) == 3 else element_id


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


class MessageCache:
    """Large elements kept between runs, as the browser keeps them (see the top)."""

    def __init__(self) -> None:
        self.entries: dict[str, ForwardMsg] = {}

    def hashes(self) -> list[str]:
        """What a rerun request lists as kept."""
        return list(self.entries)

    def keep(self, fwd: ForwardMsg) -> None:
        if fwd.metadata.cacheable and fwd.hash:
            self.entries[fwd.hash] = fwd

    def find(self, ref_hash: str) -> ForwardMsg | None:
        return self.entries.get(ref_hash)


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
            fwd = ForwardMsg()
            fwd.ParseFromString(data)
            kind = fwd.WhichOneof("type")
            if kind == "ref_hash":
                cached = self.cache.find(fwd.ref_hash)
                if cached is None:
                    run.error = run.error or f"ref_hash {fwd.ref_hash}: not in the cache"
                    continue
                fwd, kind = cached, cached.WhichOneof("type")
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


# ---------------------------------------------------------------------- checks


def check_heads_tokens(run: Rerun) -> str:
    """'' when the heads page's token charts show exactly `run.sentence`'s tokens."""
    from bench.sentences import chart_labels, minilm_tokens

    expected = chart_labels(minilm_tokens(run.sentence)[:128])
    for key in TOKEN_CHART_KEYS:
        got = run.chart_x(key)
        if got is None:
            return f"no {key} chart"
        if got != expected:
            return f"{key} chart shows other tokens: {got[:6]}… (expected {expected[:6]}…)"
    return ""


def check_words_shown(run: Rerun) -> str:
    """'' when every word of the sentence appears in the page's token text (any page)."""
    shown = " ".join(run.texts).lower()
    missing = [w for w in run.sentence.lower().split() if w not in shown]
    return f"words not on the page: {missing[:5]}" if missing else ""


def check_text_charted(run: Rerun, key: str, n: int = 12) -> str:
    """'' when chart `key` carries the sentence's first `n` characters (for a page that
    reads the sentence character by character and shows it only inside a chart)."""
    spec = run.charts.get(key)
    if spec is None:
        return f"chart {key!r} not drawn"
    prefix = json.dumps(run.sentence[:n], ensure_ascii=False)[1:-1]
    return "" if prefix in spec else f"chart {key!r} does not show {run.sentence[:n]!r}"


# ---------------------------------------------------------------------- load


@dataclass
class VisitorResult:
    visitor: int
    reruns: list[Rerun] = field(default_factory=list)
    error: str = ""  # connection-level failure
    not_sent: int = 0  # sentences left when the sending window closed


@dataclass
class LoadPlan:
    """How a bounded load runs.

    New sentences are sent only within `send_window_s` of the start; a rerun already
    sent may finish until `hard_limit_s` (then it counts as an error). With both equal,
    the whole load, unanswered reruns included, ends by `hard_limit_s`.
    """

    page: str = "heads"
    send_window_s: float = 60.0
    hard_limit_s: float = 60.0
    pause_s: tuple[float, float] = (0.3, 1.0)  # the visitor reads, then types again
    ramp_s: float = 1.0  # arrivals spread over this long
    rerun_timeout_s: float = RERUN_TIMEOUT_S
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    seed: int = 0
    # Whether answers are checked by their token charts (default: on the heads page).
    token_charts: bool | None = None
    # False: each sentence arrives whole (one rerun). True: the last `typed_keys` of each
    # sentence after the first are typed key by key, `key_gap_s` apart, into a box that
    # commits after `live_pause_s`, or after the pause the page itself sets when that is
    # None (heads page only: answers are told by their charts).
    typed: bool = False
    live_pause_s: float | None = None
    typed_keys: int = 12
    key_gap_s: tuple[float, float] = (0.08, 0.45)


def _check(run: Rerun, plan: LoadPlan) -> str:
    token_charts = plan.token_charts if plan.token_charts is not None else plan.page == "heads"
    return check_heads_tokens(run) if token_charts else check_words_shown(run)


async def visitor(
    index: int,
    port: int,
    sentences: list[str],
    plan: LoadPlan,
    start: float,
    rng: random.Random,
) -> VisitorResult:
    """One visitor: opens /page with its first sentence, then types the others."""
    result = VisitorResult(index)
    await asyncio.sleep(plan.ramp_s * rng.random())
    try:
        async with Session(port, connect_timeout_s=plan.connect_timeout_s) as session:
            for i, sentence in enumerate(sentences):
                now = time.monotonic()
                if now - start >= plan.send_window_s:
                    result.not_sent = len(sentences) - i
                    break
                left = start + plan.hard_limit_s - now
                session.rerun_timeout_s = max(0.5, min(plan.rerun_timeout_s, left))
                session.cut_reason = (
                    f"unanswered at the load's {plan.hard_limit_s:.0f} s limit"
                    if left < plan.rerun_timeout_s
                    else ""
                )
                if i == 0:
                    run = await session.open_page(plan.page, sentence)
                elif plan.typed:
                    typed_from = max(0, len(sentence) - plan.typed_keys)
                    gaps = [rng.uniform(*plan.key_gap_s) for _ in sentence[typed_from + 1 :]]
                    pause = plan.live_pause_s or session.live_pause_s or 0.25
                    run = await session.type_live(sentence, typed_from, gaps, pause)
                else:
                    run = await session.type_sentence(sentence)
                if run.ok:
                    run.error = _check(run, plan)
                result.reruns.append(run)
                if run.latency_s is None:
                    result.not_sent = len(sentences) - i - 1
                    break  # no answer: this visitor gives up
                await asyncio.sleep(rng.uniform(*plan.pause_s))
    except Exception as exc:  # noqa: BLE001 - counted as an error
        result.error = f"{type(exc).__name__}: {exc}"
        result.not_sent = len(sentences) - len(result.reruns)
    return result


@dataclass
class LoadReport:
    visitors: list[VisitorResult]
    wall_s: float
    planned: int

    @property
    def reruns(self) -> list[Rerun]:
        return [r for v in self.visitors for r in v.reruns]

    @property
    def errors(self) -> list[str]:
        errs = [f"visitor {v.visitor}: {v.error}" for v in self.visitors if v.error]
        errs += [
            f"visitor {v.visitor} rerun {i}: {r.error}"
            for v in self.visitors
            for i, r in enumerate(v.reruns)
            if r.error
        ]
        return errs

    @property
    def latencies(self) -> list[float]:
        return [r.latency_s for r in self.reruns if r.latency_s is not None]

    @property
    def last_key_latencies(self) -> list[float]:
        """Last key → answer of the sentences typed key by key."""
        return [r.last_key_s for r in self.reruns if r.last_key_s is not None]

    @property
    def commits_per_sentence(self) -> float | None:
        typed = [r.commits for r in self.reruns if r.commits]
        return statistics.mean(typed) if typed else None

    @property
    def completed(self) -> int:
        return sum(1 for r in self.reruns if r.ok)

    @property
    def not_sent(self) -> int:
        return sum(v.not_sent for v in self.visitors)


def run_load(port: int, sentences_by_visitor: list[list[str]], plan: LoadPlan) -> LoadReport:
    """Every visitor at once (arrivals spread over `plan.ramp_s`), bounded by the plan."""

    async def main() -> LoadReport:
        rng = random.Random(plan.seed)  # noqa: S311 - pauses, not secrets
        start = time.monotonic()
        tasks = [
            asyncio.create_task(
                visitor(i, port, sents, plan, start, random.Random(rng.random()))  # noqa: S311
            )
            for i, sents in enumerate(sentences_by_visitor)
        ]
        done, pending = await asyncio.wait(tasks, timeout=plan.hard_limit_s + 5.0)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5.0)
        results = []
        for i, task in enumerate(tasks):
            if task in done and not task.cancelled() and task.exception() is None:
                results.append(task.result())
            else:
                results.append(VisitorResult(i, error="cancelled at the time limit"))
        return LoadReport(
            results, time.monotonic() - start, sum(len(s) for s in sentences_by_visitor)
        )

    return run_async(main())


def run_async(coro):
    """asyncio.run(coro) in a thread of its own: works beside playwright's sync API,
    which keeps an event loop running in the calling thread."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
