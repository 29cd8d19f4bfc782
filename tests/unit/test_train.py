"""Training: a seed fixes the run, and a short run on every task halves the loss."""

from __future__ import annotations

import pytest
import torch

from models.recurrent import Recurrent, RecurrentConfig
from models.tasks import make_task
from models.train import TARGETS, Recipe, Target, train
from models.transformer import Transformer, TransformerConfig


def _same_parameters(a, b) -> bool:
    pairs = zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    return all(torch.equal(x, y) for x, y in pairs)


def test_the_same_seed_gives_the_same_run_twice():
    task = make_task("copy", lag=5)
    recipe = Recipe(steps=15, batch_size=16, d_model=16)
    first, again = (train(task, "gru", seed=3, recipe=recipe) for _ in range(2))
    assert first.history.loss == again.history.loss
    assert _same_parameters(first.model, again.model)
    other = train(task, "gru", seed=4, recipe=recipe)
    assert other.history.loss != first.history.loss


# The smallest run per task that shows learning: (task settings, model, recipe).
SHORT_RUNS = {
    "copy": ({"lag": 5}, "transformer", Recipe(40, lr=1e-2, batch_size=16, d_model=16, n_layers=1)),
    "reverse": ({"length": 4}, "transformer", Recipe(40, 1e-2, 16, d_model=16, n_layers=1)),
    "adding": ({"T": 10}, "lstm", Recipe(40, lr=1e-2, batch_size=16, d_model=16)),
    "induction": ({"half": 4, "n_symbols": 6}, "transformer", Recipe(80, 1e-2, 16, d_model=16)),
    "lm": ({"context": 16}, "lstm", Recipe(80, lr=1e-2, batch_size=16, d_model=32)),
    "numbers": ({}, "encdec", Recipe(30, lr=1e-2, batch_size=16, d_model=16, n_layers=1)),
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name", list(SHORT_RUNS))
def test_a_short_run_halves_the_loss(name):
    settings, kind, recipe = SHORT_RUNS[name]
    trainer = train(make_task(name, **settings), kind, seed=0, recipe=recipe)
    losses = trainer.history.loss
    assert len(losses) == recipe.steps
    assert sum(losses[-5:]) / 5 < losses[0] / 2


def test_on_step_can_stop_a_run():
    seen = []
    trainer = train(
        make_task("copy", lag=5), "rnn", steps=50, on_step=lambda s, *_: seen.append(s) or s < 3
    )
    assert seen == [1, 2, 3] and trainer.step_count == 3


def test_a_batch_through_the_recurrent_core_equals_one_sequence_at_a_time():
    for cell in ("rnn", "lstm", "gru"):
        model = Recurrent(RecurrentConfig(cell=cell, num_inputs=3, num_hiddens=5), seed=1)
        X = torch.randn(4, 6, 3, generator=torch.Generator().manual_seed(0))
        batched = model(X)
        for row in range(4):
            single = model(X[row])
            for name, value in single.items():
                torch.testing.assert_close(batched[name][row], value, rtol=0, atol=1e-6)


def test_a_batch_through_the_transformer_equals_one_sequence_at_a_time():
    for positional in ("learned", "rope", "alibi"):
        cfg = TransformerConfig(
            d_model=8,
            n_heads=2,
            d_head=4,
            n_layers=2,
            n_ctx=8,
            d_vocab=11,
            d_mlp=16,
            positional=positional,
            causal=True,
        )
        model = Transformer(cfg, seed=2)
        tokens = torch.randint(11, (3, 7), generator=torch.Generator().manual_seed(0))
        batched = model(tokens)
        for row in range(3):
            torch.testing.assert_close(batched[row], model(tokens[row]), rtol=0, atol=1e-5)


def test_targets_compare_in_the_right_direction():
    mse = Target("adding", (("T", 50),), "lstm", "mse", 0.01)
    assert mse.met(0.005) and not mse.met(0.02)
    accuracy = TARGETS[0]
    assert accuracy.met(0.96) and not accuracy.met(0.9)
