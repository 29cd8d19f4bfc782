"""Probes of this lesson: what its tour steps quote, ask and check, from its parts' offers.

Each reads the arrays a part's charts draw (components/ui/parts/positional/), as the part
offered them: the table over the sentence ("positional.table"), the outputs reordered
("positional.order"), similarity by offset ("positional.similarity"), the shift as a
rotation ("positional.rotation"), RoPE's score grid ("positional.rope"), the length a
model was built for ("positional.extrapolation") and a trained table ("positional.trained").
"""

from __future__ import annotations

import numpy as np

from components.tours.probes import Choice, Live, Number, probe

# The encodings a reordering question offers, in the order of the tour file's options.
REORDER_OPTIONS = ("sinusoidal", "learned", "rope", "alibi")
# Two RoPE scores closer than this share of the grid's largest are "the same" (float64
# rounding of a rotation is about 1e-15 of it).
SAME_SCORE = 1e-9


@probe("positional.n_tokens", reads=("positional.table",))
def n_tokens(live: Live) -> int:
    """How many tokens the sentence makes (the positions the table marks as the sentence)."""
    return int(live.need("positional.table")["n"])


@probe("positional.table_last", reads=("positional.table",))
def table_last(live: Live) -> int:
    """The last position the table chart draws."""
    return int(live.need("positional.table")["span"]) - 1


@probe("positional.d_model", reads=("positional.table",))
def d_model(live: Live) -> int:
    """How many dimensions the position vectors have (the table's columns)."""
    return int(np.shape(live.need("positional.table")["table"])[1])


@probe("positional.order_error", reads=("positional.order",))
def order_error(live: Live, scheme: str = "none") -> float:
    """Largest |output on the reordered tokens − the outputs moved| for one encoding."""
    return float(live.need("positional.order")["max_error"][scheme])


@probe("positional.blind_to_reorder", reads=("positional.order",))
def blind_to_reorder(live: Live) -> Choice:
    """Which encoding (of REORDER_OPTIONS, the tour file's options) changes the outputs
    least when the tokens are reordered: the one the bar chart draws lowest."""
    errors = live.need("positional.order")["max_error"]
    return Choice(right=int(np.argmin([float(errors[s]) for s in REORDER_OPTIONS])))


@probe("positional.self_similarity", reads=("positional.similarity",))
def self_similarity(live: Live) -> Number:
    """PE(p)·PE(p) on the sinusoidal chart: its curves at offset k = 0 (they coincide)."""
    curves = np.asarray(live.need("positional.similarity")["sinusoidal"], dtype=np.float64)
    return Number(float(curves[0, 0]), relative=0.02)


@probe("positional.vector_size", reads=("positional.similarity",))
def vector_size(live: Live, pairs: bool = False) -> int:
    """How many numbers a position vector of the similarity charts has (or (sin, cos) pairs)."""
    d = int(live.need("positional.similarity")["d_model"])
    return d // 2 if pairs else d


@probe("positional.similarity_spread", reads=("positional.similarity",))
def similarity_spread(live: Live, scheme: str = "sinusoidal") -> float:
    """The largest gap, at one offset, between the curves drawn from different starts."""
    curves = np.asarray(live.need("positional.similarity")[scheme], dtype=np.float64)
    return float(np.nanmax(np.ptp(curves, axis=0)))


@probe("positional.rotation_k", reads=("positional.rotation",))
def rotation_k(live: Live) -> int:
    return int(live.need("positional.rotation")["k"])


@probe("positional.rotation_error", reads=("positional.rotation",))
def rotation_error(live: Live, fit: str = "exact") -> float:
    """The largest error the errors chart draws for the exact rotation or the naive fit."""
    return float(np.max(live.need("positional.rotation")[fit]))


def _rope_grid(live: Live) -> tuple[np.ndarray, np.ndarray]:
    rope = live.need("positional.rope")
    return np.asarray(rope["positions"]), np.asarray(rope["scores"], dtype=np.float64)


@probe("positional.rope_position", reads=("positional.rope",))
def rope_position(live: Live, index: int = 0) -> int:
    """The position the grid draws at row (and column) `index`."""
    return int(_rope_grid(live)[0][index])


@probe("positional.rope_score", reads=("positional.rope",))
def rope_score(live: Live, query: int = 0, key: int = 0) -> float:
    """The grid's score for the query at row `query` and the key at column `key`."""
    return float(_rope_grid(live)[1][query, key])


@probe("positional.rope_same_offset", reads=("positional.rope",))
def rope_same_offset(live: Live, key: int = 1, later: int = 4, offset: int = 3) -> Choice:
    """Is the score of a query `offset` after its key the same for the key at row `key`
    and at row `later`? Options (the tour file's): the same, larger later, smaller later."""
    _, scores = _rope_grid(live)
    first, second = scores[key + offset, key], scores[later + offset, later]
    if abs(second - first) <= SAME_SCORE * max(1.0, float(np.abs(scores).max())):
        return Choice(right=0)
    return Choice(right=1 if second > first else 2)


@probe("positional.rope_shift", reads=("positional.rope",))
def rope_shift(live: Live) -> int:
    return int(live.need("positional.rope")["shift"])


@probe("positional.rope_shift_change", reads=("positional.rope",))
def rope_shift_change(live: Live) -> float:
    """The largest change of any score when both positions move by the shift."""
    rope = live.need("positional.rope")
    return float(np.abs(np.asarray(rope["scores"]) - np.asarray(rope["unshifted"])).max())


@probe("positional.rope_shifted_far", reads=("positional.rope",))
def rope_shifted_far(live: Live, above: int = 1000) -> bool:
    """Done when both positions are shifted by more than `above` and the grid drawn is
    still the unshifted one (up to rounding)."""
    rope = live.need("positional.rope")
    scores, unshifted = np.asarray(rope["scores"]), np.asarray(rope["unshifted"])
    same = np.abs(scores - unshifted).max() <= SAME_SCORE * max(1.0, np.abs(unshifted).max())
    return int(rope["shift"]) > above and bool(same)


@probe("positional.built", reads=("positional.extrapolation",))
def built(live: Live) -> int:
    return int(live.need("positional.extrapolation")["built"])


@probe("positional.full_turns", reads=("positional.extrapolation",))
def full_turns(live: Live, scheme: str = "sinusoidal") -> int:
    """How many frequency pairs of `scheme` turn a full circle within the built length."""
    return int(live.need("positional.extrapolation")["turns"][scheme])


@probe("positional.pairs", reads=("positional.extrapolation",))
def pairs(live: Live, scheme: str = "sinusoidal") -> int:
    return int(live.need("positional.extrapolation")["pairs"][scheme])


@probe("positional.trained_head", reads=("positional.trained",))
def trained_head(live: Live) -> int:
    return int(live.need("positional.trained")["head"])


def _by_offset(live: Live, when: str) -> np.ndarray:
    trained = live.need("positional.trained")
    return np.asarray(trained[when], dtype=np.float64)[int(trained["head"])]


@probe("positional.trained_peak", reads=("positional.trained",))
def trained_peak(live: Live) -> Number:
    """The offset k at which the chosen head's by-offset curve after training peaks."""
    return Number(float(np.argmax(_by_offset(live, "after"))), relative=0.0, absolute=0.0)


@probe("positional.trained_share", reads=("positional.trained",))
def trained_share(live: Live, when: str = "after") -> float:
    """The head's mean weight at the offset where its after-training curve peaks."""
    peak = int(np.argmax(_by_offset(live, "after")))
    return float(_by_offset(live, when)[peak])
