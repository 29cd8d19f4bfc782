"""The induction-circuit probes: where each scored token occurred before, what a head's
attention scores, and which heads make the circuit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.analysis.probes import (
    char_surprisal,
    circuit,
    head_scores,
    pattern_scores,
    previous_occurrence,
)
from models.nets.task_models import ModelSpec, SequenceModel
from models.training.task_base import IGNORE
from models.training.tasks import make_task


def test_previous_occurrence_is_the_last_earlier_position_with_the_same_token(rng):
    for _ in range(50):
        tokens = rng.integers(0, 5, size=rng.integers(1, 30))
        expected = [
            max((j for j in range(q) if tokens[j] == tokens[q]), default=-1)
            for q in range(len(tokens))
        ]
        assert previous_occurrence(tokens).tolist() == expected


def _one_hot_heads(batch_row) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Attention `[1 layer, 3 heads, q, k]` for one sequence: head 0 on the previous token,
    head 1 on the token after the previous occurrence (where there is one), head 2 uniform
    over what it may see."""
    tokens = batch_row.inputs[0].numpy()
    scored = (batch_row.targets[0] != IGNORE).numpy()
    n = len(tokens)
    patterns = np.zeros((1, 3, n, n))
    before = previous_occurrence(tokens)
    for q in range(n):
        patterns[0, 0, q, max(q - 1, 0)] = 1.0
        patterns[0, 1, q, before[q] + 1 if before[q] >= 0 else q] = 1.0
        patterns[0, 2, q, : q + 1] = 1.0 / (q + 1)
    return patterns, tokens, scored


def test_a_head_on_the_previous_token_and_one_on_the_next_after_the_last_occurrence():
    task = make_task("induction")
    patterns, tokens, scored = _one_hot_heads(task.held_out(1))
    induction, previous = pattern_scores(patterns, tokens, scored)
    assert previous[0, 0] == 1.0
    assert previous[0, 2] == pytest.approx(np.mean(1 / np.arange(2, 33)))  # query q sees q + 1
    queries = np.flatnonzero(scored)
    uniform = np.mean(1 / (queries + 1))
    assert induction[0, 1] == 1.0 and induction[0, 2] == pytest.approx(uniform)
    # the previous-token head lands on the induction source only where they coincide
    assert induction[0, 0] == pytest.approx(
        np.mean(previous_occurrence(tokens)[queries] + 1 == queries - 1)
    )


def test_scores_need_every_scored_token_to_have_occurred_before():
    tokens = np.array([1, 2, 3, 4])
    with pytest.raises(ValueError):
        pattern_scores(np.zeros((1, 1, 4, 4)), tokens, np.array([False, True, False, False]))


def test_the_circuit_takes_the_previous_token_head_from_the_layers_before_the_induction_head():
    scores = {
        "induction": np.array([[0.1, 0.2], [0.05, 0.8], [0.3, 0.1]]),
        "previous_token": np.array([[0.1, 0.7], [0.2, 0.3], [0.95, 0.1]]),
    }
    best = circuit(scores)
    assert best["induction"] == (1, 1, 0.8)
    assert best["previous_token"] == (0, 1, 0.7)  # not layer 2's 0.95: it comes after
    scores["induction"] = np.array([[0.9, 0.2], [0.05, 0.8], [0.3, 0.1]])
    assert circuit(scores)["previous_token"] == (-1, -1, 0.0)


def test_head_scores_of_a_transformer_are_mean_weights_and_refuse_other_models():
    task = make_task("induction", length=16, min_repeat=3, max_repeat=6, n_symbols=10)
    spec = ModelSpec("transformer", 10, 10, d_model=8, n_layers=2, n_heads=2, n_ctx=16)
    scores = head_scores(SequenceModel(spec, seed=1), task, n=8)
    for values in scores.values():
        assert values.shape == (2, 2) and ((values >= 0) & (values <= 1)).all()
    with pytest.raises(ValueError):
        head_scores(SequenceModel(ModelSpec("lstm", 10, 10, d_model=8), seed=1), task)


def _randomised(model: SequenceModel, seed: int = 3) -> SequenceModel:
    """`model` with every weight and bias drawn at random, so each gate's bias counts."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    return model.freeze()


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru", "transformer"])
def test_predict_gives_what_forward_gives(kind):
    model = _randomised(SequenceModel(ModelSpec(kind, n_in=11, n_out=11, d_model=16), seed=2))
    ids = torch.randint(0, 11, (3, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(model.predict(ids), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.predict(ids[0]), expected[0], atol=1e-5, rtol=1e-5)


def test_predict_reads_feature_inputs_as_forward_does():
    spec = ModelSpec("lstm", n_in=2, n_out=1, d_model=8, features=True)
    model = _randomised(SequenceModel(spec, seed=0))
    X = torch.randn(2, 25, 2, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(model.predict(X), model(X), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "transformer"])
def test_char_surprisal_is_minus_log2_of_the_next_characters_probability(kind):
    vocab = tuple(" abcdefgh")
    model = _randomised(SequenceModel(ModelSpec(kind, n_in=len(vocab), n_out=len(vocab)), seed=1))
    text = "bad cafe?hedge"  # "?" is outside the alphabet: read as a space, scored NaN
    bits = char_surprisal(model, text, vocab)
    ids = torch.tensor([[vocab.index(c) if c in vocab else 0 for c in text]])
    with torch.no_grad():
        probs = torch.softmax(model(ids)[0], dim=-1).numpy().astype(np.float64)
    for i in range(1, len(text)):
        if text[i] in vocab:
            assert bits[i - 1] == pytest.approx(
                -np.log2(probs[i - 1, vocab.index(text[i])]), abs=1e-4
            )
        else:
            assert np.isnan(bits[i - 1])
