"""Probes of this lesson: what its tour steps quote, ask and check, from its parts' offers.

The offers (components/ui/parts/heads/): "heads.reading", every head's weights as the
all-heads chart draws them; "heads.one_head", the chosen head's; "heads.focus", the focus
token's row in every head; "heads.statistics", the head statistics as drawn;
"heads.ablation", what switching the chosen heads off changed; "heads.rollout", the
rollout through the chosen layer. Labels are the charts' own (`3:animal`).
"""

from __future__ import annotations

import numpy as np

from components.tours.probes import Choice, Live, Number, probe

# Where a head's typical token looks (the tour file gives these options, in this order).
PATTERN_KINDS = ("itself", "previous", "next", "first", "last", "other")
_SIZES = ("layers", "heads_per_layer", "heads")


def _kind_of(query: int, key: int, n: int) -> int:
    """The index in PATTERN_KINDS of where `query` looks when it looks at `key`: itself
    and its neighbours first (the first token is also the second token's previous one)."""
    for kind, hit in enumerate((query, query - 1, query + 1, 0, n - 1)):
        if key == hit:
            return kind
    return len(PATTERN_KINDS) - 1


@probe("heads.n_tokens", reads=("heads.reading",))
def n_tokens(live: Live) -> int:
    return len(live.need("heads.reading")["tokens"])


@probe("heads.size", reads=("heads.reading",))
def size(live: Live, what: str = "heads") -> int:
    """The model's layers, heads per layer, or heads in all."""
    reading = live.need("heads.reading")
    layers, per_layer = int(reading["n_layers"]), int(reading["n_heads"])
    return {"layers": layers, "heads_per_layer": per_layer, "heads": layers * per_layer}[what]


@probe("heads.sink_names", reads=("heads.reading",))
def sink_names(live: Live) -> str:
    """The tokens counted as sinks, as the sentence has them: `[CLS] + [SEP]`."""
    reading = live.need("heads.reading")
    return " + ".join(str(reading["tokens"][i]) for i in reading["sinks"])


@probe("heads.chosen", reads=("heads.one_head",))
def chosen(live: Live, what: str = "layer") -> int:
    """The layer or the head chosen above the one-head chart."""
    return int(live.need("heads.one_head")[what])


@probe("heads.focus_token", reads=("heads.focus",))
def focus_token(live: Live) -> str:
    """The token chosen under Token focus."""
    focus = live.need("heads.focus")
    return str(focus["tokens"][int(focus["query"])])


def _focus_row(live: Live) -> tuple[np.ndarray, tuple[str, ...]]:
    """The chosen head's weights from the focus token, as the one-head chart draws them."""
    head = live.need("heads.one_head")
    query = int(live.need("heads.focus")["query"])
    return np.asarray(head["pattern"])[query], tuple(map(str, head["labels"]))


@probe("heads.most_attended", reads=("heads.one_head", "heads.focus"))
def most_attended(live: Live) -> Choice:
    """Which token the focus token attends to most in the chosen head: every token of the
    sentence is an option, in the sentence's order."""
    row, labels = _focus_row(live)
    return Choice(right=int(np.argmax(row)), options=labels)


@probe("heads.top_weight", reads=("heads.one_head", "heads.focus"))
def top_weight(live: Live) -> float:
    """The largest weight the focus token gives any token in the chosen head."""
    row, _ = _focus_row(live)
    return float(row.max())


def _kinds(pattern: np.ndarray) -> np.ndarray:
    """How many queries of one head look most at each of PATTERN_KINDS."""
    n = pattern.shape[-1]
    looks_at = np.argmax(pattern, axis=-1)
    kinds = [_kind_of(q, int(k), n) for q, k in enumerate(looks_at)]
    return np.bincount(kinds, minlength=len(PATTERN_KINDS))


@probe("heads.pattern_kind", reads=("heads.one_head",))
def pattern_kind(live: Live) -> Choice:
    """Where the chosen head's typical token looks: the place (PATTERN_KINDS) that most
    queries give their largest weight (the first in that order on a tie)."""
    counts = _kinds(np.asarray(live.need("heads.one_head")["pattern"]))
    return Choice(right=int(np.argmax(counts)))


@probe("heads.pattern_share", reads=("heads.one_head",))
def pattern_share(live: Live) -> float:
    """The share of the chosen head's queries that look where its typical token looks."""
    counts = _kinds(np.asarray(live.need("heads.one_head")["pattern"]))
    return float(counts.max() / counts.sum())


def _sink_share(live: Live) -> np.ndarray:
    """`[layer, head]`: each head's mean weight on the sink keys, summed, as the head
    statistics draw the shares."""
    drawn = live.need("heads.statistics")
    return sum(np.asarray(drawn["stats"][name], dtype=np.float64) for name in drawn["sink_shares"])


@probe("heads.sink_heads", reads=("heads.statistics",))
def sink_heads(live: Live) -> Number:
    """How many heads put over half their weight, averaged over the queries, on the sinks:
    right within 10 %, or within 2 heads."""
    return Number(float((_sink_share(live) > 0.5).sum()), relative=0.1, absolute=2.0)


def _entropy(live: Live) -> np.ndarray:
    return np.asarray(live.need("heads.statistics")["stats"]["entropy"], dtype=np.float64)


@probe("heads.lowest_entropy", reads=("heads.statistics",))
def lowest_entropy(live: Live, what: str = "bits") -> float | int:
    """The most focused head: its layer, its head, or its entropy in bits."""
    entropy = _entropy(live)
    layer, head = np.unravel_index(int(np.argmin(entropy)), entropy.shape)
    return {"layer": int(layer), "head": int(head), "bits": float(entropy[layer, head])}[what]


@probe("heads.max_entropy", reads=("heads.statistics",))
def max_entropy(live: Live) -> float:
    """The most a head's entropy can be on this sentence: log₂ of its number of tokens."""
    return float(np.log2(int(live.need("heads.statistics")["n_tokens"])))


@probe("heads.heads_off", reads=("heads.ablation",))
def heads_off(live: Live) -> int:
    return len(live.need("heads.ablation")["heads_off"])


@probe("heads.cosine", reads=("heads.ablation",))
def cosine(live: Live) -> float:
    """The sentence embedding's cosine similarity to the original, as the metric shows it
    (NaN for a decoder, whose change is measured on its next token)."""
    value = live.need("heads.ablation")["cosine"]
    return float("nan") if value is None else float(value)


@probe("heads.embedding_below", reads=("heads.ablation",))
def embedding_below(live: Live, below: float = 0.99) -> bool:
    """Done when heads are switched off and the sentence embedding's similarity to the
    original has fallen below `below`."""
    change = live.need("heads.ablation")
    return bool(change["heads_off"]) and change["cosine"] is not None and change["cosine"] < below


@probe("heads.rollout_layer", reads=("heads.rollout",))
def rollout_layer(live: Live) -> int:
    return int(live.need("heads.rollout")["through"])


@probe("heads.rollout_top", reads=("heads.rollout", "heads.focus"))
def rollout_top(live: Live) -> Choice:
    """Which input token makes up the largest share of the focus token's position through
    the chosen layer, by rollout: every token is an option."""
    rollout = live.need("heads.rollout")
    row = np.asarray(rollout["flow"])[int(live.need("heads.focus")["query"])]
    return Choice(right=int(np.argmax(row)), options=tuple(map(str, rollout["labels"])))


@probe("heads.shows_lowest_entropy", reads=("heads.one_head", "heads.statistics"))
def shows_lowest_entropy(live: Live) -> bool:
    """Done when the one-head chart shows the most focused head."""
    head = live.need("heads.one_head")
    return (int(head["layer"]), int(head["head"])) == (
        lowest_entropy(live, "layer"),
        lowest_entropy(live, "head"),
    )
