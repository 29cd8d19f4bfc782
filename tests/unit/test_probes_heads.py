"""The attention lesson's tour probes (components/tours/probes/heads.py), on offers built
as its parts build them, checked against numbers reached another way: the raw scores
q·k (softmax keeps their order), patterns built to have a known answer, closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from components.grid import position_labels
from components.tours.probes import Choice, Live, MissingLive, Number, run_probe
from components.tours.probes.heads import PATTERN_KINDS
from models.analysis.attention_stats import attention_rollout, head_statistics, sink_positions


def _weights(scores: torch.Tensor) -> np.ndarray:
    """Attention weights for additive `scores` [..., q, k]: what scaled_dot_product_attention
    mixes the values with, read by giving it the identity as the values."""
    scores = scores.float()
    n = scores.shape[-1]
    zeros = torch.zeros(*scores.shape[:-1], 1)
    out = F.scaled_dot_product_attention(zeros, zeros, torch.eye(n).expand_as(scores), scores)
    return out.numpy().astype(np.float64)


def _offers(patterns: np.ndarray, layer: int, head: int, query: int, tokens=None) -> Live:
    """The offers of the overview and the statistics part, as the parts make them."""
    n_layers, n_heads, n, _ = patterns.shape
    tokens = tokens or [f"w{i}" for i in range(n)]
    sinks = sink_positions(n, causal=False)
    stats = head_statistics(patterns)
    return Live(
        {
            "heads.reading": dict(
                tokens=tokens,
                labels=position_labels(tokens),
                n_layers=n_layers,
                n_heads=n_heads,
                patterns=patterns,
                specials=(0, n - 1),
                sinks=sinks,
                causal=False,
            ),
            "heads.one_head": dict(
                layer=layer,
                head=head,
                labels=position_labels(tokens),
                pattern=patterns[layer, head],
            ),
            "heads.focus": dict(
                query=query,
                tokens=tokens,
                labels=position_labels(tokens),
                weights=patterns[:, :, query, :],
            ),
            "heads.statistics": dict(
                stats=stats, sink_shares=("cls", "sep")[: len(sinks)], n_tokens=n
            ),
        }
    )


def test_most_attended_is_the_largest_raw_score_of_the_focus_token_in_the_chosen_head():
    generator = torch.Generator().manual_seed(7)
    for trial in range(20):
        n_layers, n_heads, n, d = 3, 4, int(3 + trial % 9), 8
        q = torch.randn(n_layers, n_heads, n, d, generator=generator)
        k = torch.randn(n_layers, n_heads, n, d, generator=generator)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        patterns = _weights(scores)
        layer, head, query = trial % n_layers, trial % n_heads, trial % n
        live = _offers(patterns, layer, head, query)
        answer = run_probe("heads.most_attended", live)
        assert isinstance(answer, Choice)
        assert answer.right == int(torch.argmax(scores[layer, head, query]))
        assert answer.options == tuple(f"{i}:w{i}" for i in range(n))
        top = scores[layer, head, query]
        expected_weight = float(torch.exp(top.max()) / torch.exp(top).sum())
        assert run_probe("heads.top_weight", live) == pytest.approx(expected_weight, rel=1e-5)
        assert run_probe("heads.focus_token", live) == f"w{query}"
        assert run_probe("heads.chosen", live, {"what": "layer"}) == layer
        assert run_probe("heads.chosen", live, {"what": "head"}) == head


def _one_target_head(n: int, target) -> np.ndarray:
    """A head whose every query q puts almost all its weight on key `target(q)`."""
    scores = torch.zeros(n, n)
    for query in range(n):
        scores[query, target(query)] = 12.0
    return _weights(scores)


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("itself", lambda q, n: q),
        ("previous", lambda q, n: max(q - 1, 0)),
        ("next", lambda q, n: min(q + 1, n - 1)),
        ("first", lambda q, n: 0),
        ("last", lambda q, n: n - 1),
        ("other", lambda q, n: (q + 3) % n),
    ],
)
def test_pattern_kind_names_where_a_head_built_to_look_there_looks(kind, target):
    n = 10
    head = _one_target_head(n, lambda q: target(q, n))
    patterns = np.stack([np.stack([np.full((n, n), 1 / n), head])])  # [1 layer, 2 heads]
    live = _offers(patterns, layer=0, head=1, query=2)
    answer = run_probe("heads.pattern_kind", live)
    assert PATTERN_KINDS[answer.right] == kind and answer.options == ()
    # Each kind's queries, counted by hand: at the edges a target is also a neighbour or
    # itself (for "other", query 6 looks at the last token and query 7 at the first).
    expected_share = {"itself": 1.0, "previous": 0.9, "next": 0.9, "first": 0.8, "last": 0.8}
    assert run_probe("heads.pattern_share", live) == pytest.approx(expected_share.get(kind, 0.8))


def test_sink_heads_counts_the_heads_built_to_put_over_half_on_cls_and_sep():
    n, n_layers, n_heads = 9, 2, 6
    rng = np.random.default_rng(3)
    sinks = {(0, 1), (0, 4), (1, 0), (1, 2), (1, 5)}
    scores = torch.from_numpy(rng.normal(size=(n_layers, n_heads, n, n)))
    for layer, head in sinks:  # 0.3 on [CLS] and on [SEP], for every query
        bump = torch.full((n, n), -30.0)
        bump[:, 0] = bump[:, -1] = math.log(0.3)
        bump[:, 1:-1] = math.log(0.4 / (n - 2))
        scores[layer, head] = bump
    for layer, head in {(0, 0), (1, 3)}:  # 0.2 on each: under half, together
        bump = torch.full((n, n), math.log(0.6 / (n - 2)))
        bump[:, 0] = bump[:, -1] = math.log(0.2)
        scores[layer, head] = bump
    patterns = _weights(scores)
    answer = run_probe("heads.sink_heads", _offers(patterns, 0, 0, 1))
    assert isinstance(answer, Number) and answer.value == len(sinks)
    assert answer.accepts(len(sinks) + 2) and not answer.accepts(len(sinks) + 3)
    tokens = ["[CLS]", *(f"w{i}" for i in range(n - 2)), "[SEP]"]
    live = _offers(patterns, 0, 0, 1, tokens=tokens)
    assert run_probe("heads.sink_names", live) == "[CLS] + [SEP]"


def test_the_lowest_entropy_head_is_the_one_built_one_hot():
    n = 8
    patterns = np.full((3, 4, n, n), 1 / n)
    patterns[2, 1] = np.eye(n)
    patterns[0, 3] = _one_target_head(n, lambda q: 0) * 0.5 + 0.5 / n  # focused, not fully
    live = _offers(patterns, 0, 0, 1)
    assert run_probe("heads.lowest_entropy", live, {"what": "layer"}) == 2
    assert run_probe("heads.lowest_entropy", live, {"what": "head"}) == 1
    assert run_probe("heads.lowest_entropy", live, {"what": "bits"}) == pytest.approx(0.0, abs=1e-9)
    assert run_probe("heads.max_entropy", live) == pytest.approx(3.0)  # log2(8)
    assert run_probe("heads.size", live, {"what": "heads"}) == 12
    assert run_probe("heads.size", live, {"what": "layers"}) == 3
    assert run_probe("heads.n_tokens", live) == n
    assert not run_probe("heads.shows_lowest_entropy", live)
    assert run_probe("heads.shows_lowest_entropy", _offers(patterns, 2, 1, 1))


def test_rollout_top_follows_heads_that_all_read_the_first_token():
    n, n_layers = 6, 3
    patterns = np.stack([np.stack([_one_target_head(n, lambda q: 0)] * 2)] * n_layers)
    flow = attention_rollout(patterns)
    query = 4
    live = Live(
        {
            "heads.rollout": dict(through=0, labels=position_labels(list("abcdef")), flow=flow[0]),
            "heads.focus": dict(query=query, labels=position_labels(list("abcdef"))),
        }
    )
    # Through layer 0, half of each position is still itself (the residual) and half the
    # first token: a tie, which the first token's position wins.
    assert flow[0][query, 0] == pytest.approx(0.5, abs=1e-4)
    through_last = dict(live.need("heads.rollout"), through=n_layers - 1, flow=flow[-1])
    live = Live({"heads.rollout": through_last, "heads.focus": live.need("heads.focus")})
    answer = run_probe("heads.rollout_top", live)
    assert answer.right == 0 and answer.options[0] == "0:a"
    assert flow[-1][query, query] == pytest.approx(0.5**n_layers, abs=1e-4)  # the rest is 0's
    assert run_probe("heads.rollout_layer", live) == n_layers - 1


def test_the_switch_off_task_is_done_only_below_its_threshold_with_heads_off():
    def ablation(heads_off, cosine):
        return Live({"heads.ablation": dict(heads_off=heads_off, causal=False, cosine=cosine)})

    below = {"below": 0.99}
    assert not run_probe("heads.embedding_below", ablation((), 1.0), below)
    assert not run_probe("heads.embedding_below", ablation(((3, 1),), 0.998), below)
    layer_0 = tuple((0, h) for h in range(12))
    assert run_probe("heads.embedding_below", ablation(layer_0, 0.97), below)
    decoder = Live({"heads.ablation": dict(heads_off=((0, 0),), causal=True, cosine=None)})
    assert not run_probe("heads.embedding_below", decoder, below)
    assert math.isnan(run_probe("heads.cosine", decoder))
    assert run_probe("heads.heads_off", ablation(((3, 1), (0, 2)), 0.99)) == 2


def test_every_probe_asks_for_its_offers():
    for name in ("heads.most_attended", "heads.pattern_kind", "heads.sink_heads", "heads.cosine"):
        with pytest.raises(MissingLive):
            run_probe(name, Live())
