"""Training: a seed fixes the run, and a short run on every task halves the loss."""

from __future__ import annotations

import pytest
import torch

from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.transformer import Transformer, TransformerConfig
from models.training.tasks import TASKS, make_task
from models.training.train import (
    TARGETS,
    Recipe,
    Target,
    Trainer,
    make_checkpoint,
    recipe_for,
    train,
)


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


@pytest.mark.parametrize("kind", ["transformer", "lstm", "ssm", "linear"])
def test_the_command_writes_the_same_checkpoint_bytes_twice(tmp_path, kind):
    """What `python -m models.training.train` writes depends only on its arguments: two runs give
    the same files, byte for byte (the JSON holds no wall-clock time)."""
    task = make_task("induction", length=12, min_repeat=3, max_repeat=5, n_symbols=8)
    recipe = Recipe(steps=12, lr=1e-2, batch_size=8, d_model=8, n_heads=2, warmup=4)
    runs = {}
    for run, seed in (("first", 0), ("again", 0), ("other_seed", 1)):
        make_checkpoint(task, kind, tmp_path / run, seed=seed, recipe=recipe)
        runs[run] = {p.name: p.read_bytes() for p in sorted((tmp_path / run).iterdir())}
    assert set(runs["first"]) == {f"induction-{kind}.json", f"induction-{kind}.safetensors"}
    assert runs["first"] == runs["again"]
    name = f"induction-{kind}.safetensors"
    assert runs["other_seed"][name] != runs["first"][name]


# The smallest run per task that shows learning: (task settings, model, recipe).
SHORT_RUNS = {
    "copy": ({"lag": 5}, "transformer", Recipe(40, lr=1e-2, batch_size=16, d_model=16, n_layers=1)),
    "selective_copy": (
        {"length": 8, "n_copy": 2},
        "ssm",
        Recipe(60, lr=1e-2, batch_size=16, d_model=16, positional="none"),
    ),
    "reverse": ({"length": 4}, "transformer", Recipe(40, 1e-2, 16, d_model=16, n_layers=1)),
    "adding": ({"T": 10}, "lstm", Recipe(40, lr=1e-2, batch_size=16, d_model=16)),
    "induction": (
        {"length": 12, "min_repeat": 3, "max_repeat": 5, "n_symbols": 8},
        "transformer",
        Recipe(125, 6e-3, 32, d_model=32, warmup=30, positional="rope"),
    ),
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


def test_a_short_run_of_linear_attention_on_selective_copying_halves_the_loss():
    task = make_task("selective_copy", length=8, n_copy=2)
    recipe = Recipe(60, lr=1e-2, batch_size=16, d_model=16, n_heads=2)
    losses = train(task, "linear", seed=0, recipe=recipe).history.loss
    assert sum(losses[-5:]) / 5 < losses[0] / 2


@pytest.mark.parametrize("name", list(TASKS))
def test_every_model_the_lab_offers_for_a_task_has_a_recipe(name):
    task = make_task(name)
    for kind in task.models:
        recipe = recipe_for(task, kind)
        assert recipe.steps >= 1
        if kind == "ssm":  # a recurrence reads in order: no position table
            assert recipe.positional == "none"


def test_the_lab_names_every_task_and_kind_in_both_languages():
    from components.i18n import LANGUAGES, strings
    from models.nets.task_models import KINDS, LABELS

    for language in LANGUAGES:
        shown = strings(language)
        for name in TASKS:
            assert shown[f"training.task.{name}"] and shown[f"training.about.{name}"]
        for kind in KINDS:
            assert shown[f"training.model.{kind}"]
    assert {k: strings("en")[f"training.model.{k}"] for k in KINDS} == LABELS
    assert strings("zh")["training.model.ssm"] == "选择性状态空间模型"
    assert strings("zh")["training.model.linear"] == "线性注意力"
    assert strings("zh")["training.task.selective_copy"] == "选择性复制"


def test_on_step_can_stop_a_run():
    seen = []
    trainer = train(
        make_task("copy", lag=5), "rnn", steps=50, on_step=lambda s, *_: seen.append(s) or s < 3
    )
    assert seen == [1, 2, 3] and trainer.step_count == 3


def test_a_batch_through_the_recurrent_core_equals_one_sequence_at_a_time(float32_atol):
    for cell in ("rnn", "lstm", "gru"):
        model = Recurrent(RecurrentConfig(cell=cell, num_inputs=3, num_hiddens=5), seed=1)
        X = torch.randn(4, 6, 3, generator=torch.Generator().manual_seed(0))
        batched = model(X)
        for row in range(4):
            single = model(X[row])
            for name, value in single.items():
                # 6 steps, each a sum over 3 inputs and 5 hidden units.
                atol = float32_atol(value, 6 * (3 + 5))
                torch.testing.assert_close(batched[name][row], value, rtol=0, atol=atol)


def test_a_batch_through_the_transformer_equals_one_sequence_at_a_time(float32_atol):
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
            alone = model(tokens[row])
            atol = float32_atol(alone, cfg.n_layers * cfg.d_mlp)
            torch.testing.assert_close(batched[row], alone, rtol=0, atol=atol)


def test_the_learning_rate_rises_over_the_warmup_then_stays():
    recipe = Recipe(steps=6, lr=0.01, batch_size=4, d_model=8, warmup=4)
    trainer = Trainer(make_task("copy", lag=5), "rnn", recipe=recipe)
    rates = []
    for _ in range(6):
        rates.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.step()
    assert rates == pytest.approx([0.0025, 0.005, 0.0075, 0.01, 0.01, 0.01])


def test_targets_compare_in_the_right_direction():
    mse = Target("adding", (("T", 50),), "lstm", "mse", 0.01)
    assert mse.met(0.005) and not mse.met(0.02)
    accuracy = TARGETS[0]
    assert accuracy.met(0.96) and not accuracy.met(0.9)
