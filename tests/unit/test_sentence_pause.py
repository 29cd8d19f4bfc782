"""The sentence box's live pause: short for a few visitors, longer as the server gets busy."""

from __future__ import annotations

import sys
import threading
from types import SimpleNamespace

import pytest

from components.ui import sentence
from components.ui.inputs import BUSY_PAUSE_MS, sentence_pause_ms


@pytest.mark.parametrize(
    ("visitors", "pause"), [(1, 60), (3, 60), (4, 250), (10, 250), (11, 400), (60, 400)]
)
def test_the_pause_grows_with_the_visitors_being_answered(visitors, pause):
    assert sentence_pause_ms(visitors) == pause
    assert sentence_pause_ms(visitors) <= BUSY_PAUSE_MS


def test_visitors_are_counted_once_each_and_forgotten_after_the_window(monkeypatch):
    monkeypatch.setattr(sentence, "_LAST_RUN", {})
    session = SimpleNamespace(session_id="a")
    monkeypatch.setattr(sentence, "session_id", lambda: session.session_id)
    assert sentence.visitors_answered(now=100.0) == 1
    assert sentence.visitors_answered(now=101.0) == 1  # the same visitor again
    session.session_id = "b"
    assert sentence.visitors_answered(now=102.0) == 2
    # a's last run is now older than the window; b ran again just now.
    later = 101.0 + sentence.ACTIVE_WINDOW_S + 1
    assert sentence.visitors_answered(now=later) == 1
    assert set(sentence._LAST_RUN) == {"b"}


def test_a_session_keeps_its_id_across_runs_and_two_sessions_differ(monkeypatch):
    first, second = {}, {}
    monkeypatch.setattr(sentence.st, "session_state", first)
    kept = sentence.session_id()
    assert sentence.session_id() == kept
    monkeypatch.setattr(sentence.st, "session_state", second)
    assert sentence.session_id() != kept
    monkeypatch.setattr(sentence.st, "session_state", first)
    assert sentence.session_id() == kept


def test_before_the_pause_reader_is_imported_the_box_takes_streamlits_own_pause(monkeypatch):
    monkeypatch.setattr(sentence, "_LAST_RUN", {})
    monkeypatch.setattr(sentence, "session_id", lambda: "alone")
    monkeypatch.delitem(sys.modules, sentence.PAUSE_READER, raising=False)
    assert sentence.live_pause() is True  # Streamlit's 250 ms, read without pandas
    monkeypatch.setitem(sys.modules, sentence.PAUSE_READER, object())
    assert sentence.live_pause() == f"{sentence_pause_ms(1)}ms"


def test_the_pause_reader_is_imported_only_while_no_first_run_imports(monkeypatch):
    from models.serving import runtime

    imported = []
    monkeypatch.setattr(runtime.importlib, "import_module", imported.append)
    monkeypatch.delitem(sys.modules, "seqlens_test_module", raising=False)
    with runtime._first_run:  # a page's first run, importing
        waiter = threading.Thread(target=runtime.import_in_turn, args=("seqlens_test_module",))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and imported == []
    waiter.join(5)
    assert imported == ["seqlens_test_module"]
    monkeypatch.setitem(sys.modules, "seqlens_test_module", object())
    runtime.import_in_turn("seqlens_test_module")
    assert imported == ["seqlens_test_module"]  # imported already: nothing again
