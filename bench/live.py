"""A websocket client that stays on its page as a browser tab does: it reads every message
the server sends, keeps the fragments' timers running, and sends what a visitor clicks or
types (bench/classroom.py drives a whole class with it).

bench/wire.py's Session asks for one run and reads until it is done; a class-mode page does
not wait to be asked: a fragment with `run_every` reruns on the browser's timer. What the
browser does there, and this client copies (Streamlit 1.67's frontend, as shipped in
streamlit/static: App's handleAutoRerun, handleNewSession and sendRerunBackMsg):

- A ForwardMsg `auto_rerun` (interval, fragment_id), sent by each full run that draws such a
  fragment, starts a timer (setInterval; kept if that fragment has one of the same interval)
  that sends BackMsg.rerun_script with `fragment_id` and `is_auto_rerun` set, every
  `interval` seconds, whether or not a run is going on. A full run's `new_session` (no
  fragment ids in its metadata.run) stops every timer, and `stop_auto_rerun` stops the ones
  it names.
- Every rerun request carries the address bar's query string (which `page_info_changed`
  sets), the page's page_script_hash (from `navigation`), the widget states the page holds
  and the hashes of the cached messages.
- The widget states: a value the visitor gave a widget, or one the server set (an element
  sent with `set_value`), until the widget leaves the page (a full run that no longer draws
  it). A widget left at its default is not sent: the server keeps the value it had, the
  same as the default the browser would send. A button click is a trigger_value sent once;
  a widget inside a fragment asks for that fragment's run (the delta's fragment_id).
- Messages over `global.minCachedMessageSize` are kept and listed in each request; one
  unused for more than MAX_CACHED_AGE full runs is forgotten (`global.maxCachedMessageAge`).

A run is what came between `new_session` and `script_finished`, read into a `Seen`: only
what bench/classroom.py looks at is kept (widgets, alerts, texts, codes, the tally chart),
not the lesson's charts, so sixty tabs stay small.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from bench.rerun import chart_key
from bench.wire import Session, forward_message

MAX_CACHED_AGE = 2  # Streamlit's default global.maxCachedMessageAge
KEPT_CHARTS = ("class_tally",)  # chart specs worth keeping (the others are large)
_SET_VALUE_KINDS = ("selectbox", "radio", "text_input", "text_area", "number_input")


@dataclass
class Widget:
    kind: str
    id: str
    shown: str | None  # the value the page shows (a selectbox's or radio's label)
    fragment_id: str = ""
    form_id: str = ""
    int_data: bool = False  # a number_input holding whole numbers


@dataclass
class Seen:
    """One run as this tab received it."""

    fragment: bool
    started_at: float
    finished_at: float = 0.0
    status: int = -1
    widgets: dict[str, Widget] = field(default_factory=dict)  # by user key (or id)
    alerts: list[tuple[int, str]] = field(default_factory=list)  # (Alert.Format, body)
    texts: list[str] = field(default_factory=list)  # markdown and captions
    codes: list[str] = field(default_factory=list)
    charts: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return not self.fragment and self.status == ForwardMsg.FINISHED_SUCCESSFULLY

    def shown(self, key: str) -> str | None:
        widget = self.widgets.get(key)
        return None if widget is None else widget.shown


def user_key(widget_id: str) -> str:
    """`$$ID-<hash>-layer` → `layer`; a widget without a key keeps its whole id."""
    key = chart_key(widget_id)
    return widget_id if key == "None" else key


def _shown_choice(proto) -> str | None:
    if proto.set_value and proto.HasField("raw_value"):
        return proto.raw_value
    has_default = proto.HasField("default") and 0 <= proto.default < len(proto.options)
    return proto.options[proto.default] if has_default else None


class LiveTab(Session):
    """One browser tab. Use `async with LiveTab(port)`; `open()` then the actions."""

    def __init__(self, port: int, name: str = "", **options):
        super().__init__(port, **options)
        self.name = name
        self.seen: list[Seen] = []
        self.book: dict[str, WidgetState] = {}  # widget id → the state the page holds
        self.widgets: dict[str, Widget] = {}  # the widgets of the last full run, by key
        self.query_string = ""
        self.errors: list[str] = []
        self.timer_sends = 0
        self._run: Seen | None = None
        self._timers: dict[str, asyncio.Task] = {}
        self._intervals: dict[str, float] = {}
        self._reader: asyncio.Task | None = None
        self._new_run = asyncio.Event()
        self._ages: dict[str, int] = {}  # cached message hash → full runs since last used

    async def open(self, page: str, query: dict[str, str]) -> None:
        self.query_string = urlencode(query)
        self._reader = asyncio.create_task(self._read_all())
        msg = BackMsg()
        msg.rerun_script.query_string = self.query_string
        msg.rerun_script.page_name = page
        await self._send(msg)

    async def close(self) -> None:
        for task in [*self._timers.values(), self._reader]:
            if task is not None:
                task.cancel()
        self._timers.clear()
        await super().close()

    # ------------------------------------------------------------------ what a visitor does

    def _request(self, fragment_id: str = "", extra: tuple[WidgetState, ...] = ()) -> BackMsg:
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query_string
        state.page_script_hash = self.page_script_hash
        if fragment_id:
            state.fragment_id = fragment_id
        extra_ids = {w.id for w in extra}
        for widget in [*(w for i, w in self.book.items() if i not in extra_ids), *extra]:
            state.widget_states.widgets.add().CopyFrom(widget)
        state.cached_message_hashes.extend(self.cache.hashes())
        return msg

    async def _send(self, msg: BackMsg) -> float:
        sent = time.monotonic()
        await self.ws.send(msg.SerializeToString())
        return sent

    @property
    def pulsing(self) -> bool:
        """Whether a fragment's timer is running (a page drawn whole keeps one)."""
        return bool(self._timers)

    def widget(self, key: str) -> Widget:
        found = self.widgets.get(key)
        if found is None:
            raise KeyError(f"{self.name}: no widget {key!r} on the page")
        return found

    async def set_value(self, key: str, value, kind: str = "string_value") -> float:
        """The visitor sets a widget (a label for a selectbox or radio); returns when sent."""
        found = self.widget(key)
        state = WidgetState(id=found.id)
        setattr(state, kind, value)
        self.book[found.id] = state
        return await self._send(self._request(found.fragment_id))

    async def click(self, key: str) -> float:
        found = self.widget(key)
        trigger = WidgetState(id=found.id, trigger_value=True)
        return await self._send(self._request(found.fragment_id, (trigger,)))

    async def submit_form(self, form_id: str, values: dict[str, object]) -> float:
        """Fill a form's widgets (by key) and press its submit button."""
        states = []
        for key, value in values.items():
            found = self.widget(key)
            state = WidgetState(id=found.id)
            if isinstance(value, str):
                state.string_value = value
            elif found.int_data:
                state.int_value = int(value)
            else:
                state.double_value = float(value)
            states.append(state)
            self.book[found.id] = state
        submit = next(
            w for w in self.widgets.values() if w.kind == "submit" and w.form_id == form_id
        )
        states.append(WidgetState(id=submit.id, trigger_value=True))
        return await self._send(self._request(submit.fragment_id, tuple(states)))

    async def wait_run(self, test, since: int = 0, timeout_s: float = 10.0) -> Seen | None:
        """The first run from index `since` on that passes `test`, or None after timeout_s."""
        deadline = time.monotonic() + timeout_s
        i = since
        while True:
            while i < len(self.seen):
                i += 1
                if test(self.seen[i - 1]):
                    return self.seen[i - 1]
            left = deadline - time.monotonic()
            event = self._new_run
            if left <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), left)

    # ------------------------------------------------------------------ what the tab reads

    async def _read_all(self) -> None:
        try:
            while True:
                data = await self.ws.recv()
                self._message(data, time.monotonic())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a closed socket after leaving is fine
            if self.ws is not None and not isinstance(exc, _closed()):
                self.errors.append(f"{self.name}: reader: {type(exc).__name__}: {exc}")

    def _message(self, data: bytes, now: float) -> None:
        fwd, kind, missing = forward_message(self.cache, data)
        if missing:
            self._error(f"ref_hash {missing}: not in the cache")
            return
        if fwd.metadata.cacheable and fwd.hash:  # sent whole, or by reference to it
            self.cache.keep(fwd)
            self._ages[fwd.hash] = 0
        if kind == "new_session":
            fragment = bool(fwd.metadata.run.fragment_ids)
            if not fragment:
                self._stop_timers(list(self._timers))
            self._run = Seen(fragment=fragment, started_at=now)
        elif kind == "auto_rerun":
            self._start_timer(fwd.auto_rerun.fragment_id, fwd.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            self._stop_timers(list(fwd.stop_auto_rerun.fragment_ids))
        elif kind == "navigation" and fwd.navigation.page_script_hash:
            self.page_script_hash = fwd.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = fwd.page_info_changed.query_string
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            if self._run is not None:
                self._element(fwd.delta.new_element, fwd.delta.fragment_id)
        elif kind == "script_finished":
            self._finished(fwd.script_finished, now)

    def _error(self, text: str) -> None:
        if self._run is not None:
            self._run.errors.append(text)
        else:
            self.errors.append(f"{self.name}: {text}")

    def _element(self, el, fragment_id: str) -> None:
        run, kind = self._run, el.WhichOneof("type")
        if kind in _SET_VALUE_KINDS or kind == "button":
            self._widget(run, kind, getattr(el, kind), fragment_id)
        elif kind == "alert":
            run.alerts.append((el.alert.format, el.alert.body))
            if el.alert.body == self._app_error:
                run.errors.append("the page showed the app's error message")
        elif kind == "markdown":
            run.texts.append(el.markdown.body)
        elif kind == "code":
            run.codes.append(el.code.code_text)
        elif kind == "plotly_chart" and chart_key(el.plotly_chart.id) in KEPT_CHARTS:
            run.charts[chart_key(el.plotly_chart.id)] = el.plotly_chart.spec
        elif kind == "exception":
            run.errors.append(f"exception: {el.exception.type}: {el.exception.message}")

    def _widget(self, run: Seen, kind: str, proto, fragment_id: str) -> None:
        if kind == "button":
            kind = "submit" if proto.is_form_submitter else "button"
            shown = None
        elif kind in ("selectbox", "radio"):
            shown = _shown_choice(proto)
        else:
            shown = str(proto.value) if proto.HasField("value") else None
        int_data = kind == "number_input" and proto.data_type == proto.INT
        widget = Widget(kind, proto.id, shown, fragment_id, proto.form_id, int_data)
        run.widgets[user_key(proto.id)] = widget
        if kind in _SET_VALUE_KINDS and proto.set_value:
            self.book[proto.id] = self._state_set(widget, proto)
        held = self.book.get(proto.id)
        if held is not None and held.WhichOneof("value") == "string_value":
            widget.shown = held.string_value  # what the page holds, not the default

    @staticmethod
    def _state_set(widget: Widget, proto) -> WidgetState:
        """The state the browser takes from an element the server set."""
        state = WidgetState(id=widget.id)
        if widget.kind in ("selectbox", "radio"):
            if proto.HasField("raw_value"):
                state.string_value = proto.raw_value
        elif widget.kind == "number_input":
            if proto.HasField("value"):
                if widget.int_data:
                    state.int_value = int(proto.value)
                else:
                    state.double_value = proto.value
        elif proto.HasField("value"):
            state.string_value = proto.value
        return state

    def _finished(self, status: int, now: float) -> None:
        run, self._run = self._run, None
        if run is None:
            return
        run.status, run.finished_at = status, now
        if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
            run.errors.append("script compile error")
        if not run.fragment and status == ForwardMsg.FINISHED_SUCCESSFULLY:
            self._after_full_run(run)
        elif run.fragment and status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
            self.widgets.update(run.widgets)
        self.errors += [f"{self.name}: {e}" for e in run.errors]
        self.seen.append(run)
        event, self._new_run = self._new_run, asyncio.Event()
        event.set()

    def _after_full_run(self, run: Seen) -> None:
        """Widgets no longer drawn leave the page; unused cached messages age."""
        self.widgets = dict(run.widgets)
        drawn = {w.id for w in run.widgets.values()}
        self.book = {i: s for i, s in self.book.items() if i in drawn}
        for digest in list(self._ages):
            self._ages[digest] += 1
            if self._ages[digest] > MAX_CACHED_AGE:
                del self._ages[digest]
                self.cache.entries.pop(digest, None)

    # ------------------------------------------------------------------ the fragments' timers

    def _start_timer(self, fragment_id: str, interval_s: float) -> None:
        if self._intervals.get(fragment_id) == interval_s and fragment_id in self._timers:
            return
        self._stop_timers([fragment_id])
        self._intervals[fragment_id] = interval_s
        self._timers[fragment_id] = asyncio.create_task(self._tick(fragment_id, interval_s))

    def _stop_timers(self, fragment_ids: list[str]) -> None:
        for fragment_id in fragment_ids:
            task = self._timers.pop(fragment_id, None)
            if task is not None:
                task.cancel()

    async def _tick(self, fragment_id: str, interval_s: float) -> None:
        while self.ws is not None:
            await asyncio.sleep(interval_s)
            msg = self._request(fragment_id)
            msg.rerun_script.is_auto_rerun = True
            try:
                await self._send(msg)
            except Exception:  # noqa: BLE001 - the socket closed: the tab is gone
                return
            self.timer_sends += 1


def _closed() -> tuple[type, ...]:
    import websockets

    return (websockets.ConnectionClosed,)
