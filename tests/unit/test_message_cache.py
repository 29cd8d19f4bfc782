"""The bench's websocket client keeps large elements between runs as the browser does."""

from __future__ import annotations

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.load import CACHE_AGE_RUNS, MessageCache


def message(digest: str, cacheable: bool = True) -> ForwardMsg:
    fwd = ForwardMsg()
    fwd.hash = digest
    fwd.metadata.cacheable = cacheable
    fwd.delta.new_element.text.body = digest
    return fwd


def test_only_cacheable_messages_are_kept_and_advertised():
    cache = MessageCache()
    cache.new_run()
    cache.keep(message("big"))
    cache.keep(message("small", cacheable=False))
    assert cache.new_run() == ["big"]
    assert cache.find("big").delta.new_element.text.body == "big"
    assert cache.find("small") is None


def test_a_message_unused_for_too_many_runs_is_forgotten_and_use_keeps_it():
    cache = MessageCache()
    cache.new_run()
    cache.keep(message("used"))
    cache.keep(message("unused"))
    for _ in range(CACHE_AGE_RUNS):
        assert sorted(cache.new_run()) == ["unused", "used"]
        assert cache.find("used") is not None
    assert cache.new_run() == ["used"]
    assert cache.find("unused") is None
