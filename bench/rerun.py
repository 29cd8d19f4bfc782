"""One script run as the websocket client (bench/wire.py) saw it, and the large messages
the client keeps between runs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


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


class MessageCache:
    """Large elements kept between runs, as the browser keeps them (see bench/wire.py)."""

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
