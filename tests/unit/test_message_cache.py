"""The bench's websocket client keeps large elements between runs as the browser does."""

from __future__ import annotations

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.rerun import MessageCache


def message(digest: str, cacheable: bool = True) -> ForwardMsg:
    fwd = ForwardMsg()
    fwd.hash = digest
    fwd.metadata.cacheable = cacheable
    fwd.delta.new_element.text.body = digest
    return fwd


def test_only_cacheable_messages_are_kept_advertised_and_found():
    cache = MessageCache()
    cache.keep(message("big"))
    cache.keep(message("small", cacheable=False))
    assert cache.hashes() == ["big"]
    assert cache.find("big").delta.new_element.text.body == "big"
    assert cache.find("small") is None
