"""What the bench measures: SeqLens and its peer, on sentences of two lengths."""

from __future__ import annotations

from dataclasses import dataclass

SHORT, LONG = 20, 128  # tokens, [CLS] and [SEP] included


@dataclass(frozen=True)
class App:
    """What a measurement runs against: SeqLens, or the peer written the straightforward way."""

    name: str
    script: str  # relative to the repository root
    path: str  # the attention page's URL path
    min_charts: int  # charts its attention page draws
    server_args: tuple[str, ...] = ()  # `streamlit run` flags for this app's servers


SEQLENS = App("SeqLens", "app.py", "heads", 4)
# Every script run from the repository reads its .streamlit/config.toml, which turns
# Streamlit's collection after every rerun off for SeqLens; the peer keeps the default.
PEER = App("peer", "bench/peer/app.py", "", 2, ("--runner.postScriptGC", "true"))
