"""Selective copying: symbols scattered among blanks, written back in order at the markers."""

from __future__ import annotations

import math

import pytest
import torch

from models.training.synthetic_tasks import _bucket
from models.training.task_base import IGNORE
from models.training.tasks import make_task


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _read_back(task, batch) -> list[tuple[list[int], list[int]]]:
    """Per row, by a plain loop: (the symbols of the body in the order they come, the
    places they sit at)."""
    blank = task.vocab.index("·")
    rows = []
    for tokens in batch.inputs.tolist():
        body = tokens[: task.length]
        places = [i for i, token in enumerate(body) if token != blank]
        rows.append(([body[i] for i in places], places))
    return rows


def test_a_batch_is_a_body_of_blanks_and_symbols_then_one_marker_per_symbol():
    task = make_task("selective_copy", length=20, n_copy=5, n_symbols=6)
    batch = task.batch(_gen(), 64)
    assert batch.inputs.shape == batch.targets.shape == (64, 25)
    assert task.vocab == ("A", "B", "C", "D", "E", "F", "·", "?")
    recall = task.vocab.index("?")
    assert (batch.inputs[:, 20:] == recall).all()
    assert (batch.inputs[:, :20] != recall).all()
    for symbols, places in _read_back(task, batch):
        assert len(places) == 5 and all(0 <= s < 6 for s in symbols)


def test_the_answers_are_the_scattered_symbols_in_the_order_they_came():
    task = make_task("selective_copy")
    batch = task.batch(_gen(1), 128)
    for row, (symbols, _) in enumerate(_read_back(task, batch)):
        targets = batch.targets[row].tolist()
        assert targets[: task.length] == [IGNORE] * task.length
        assert targets[task.length :] == symbols


def test_the_symbols_places_change_from_sequence_to_sequence():
    """No fixed place holds the k-th symbol: each lands anywhere in the body."""
    task = make_task("selective_copy")
    rows = _read_back(task, task.batch(_gen(), 512))
    for k in range(task.n_copy):
        at = [places[k] for _, places in rows]
        assert len(set(at)) > task.length // 2
        assert max(at.count(p) for p in set(at)) / len(at) < 0.2
    assert len({tuple(places) for _, places in rows}) > 500  # placements hardly repeat


def test_a_perfect_predictor_scores_one_and_a_wrong_slot_costs_its_share():
    task = make_task("selective_copy", n_copy=4)
    batch = task.held_out(50)
    scored = batch.targets != IGNORE
    logits = torch.zeros(50, task.n_ctx, task.n_out)
    answers = batch.targets.clamp(min=0)
    logits.scatter_(2, answers[..., None], 30.0)
    # whatever it says where nothing is scored does not count
    logits[~scored] = torch.randn(int((~scored).sum()), task.n_out, generator=_gen())
    assert task.score(logits, batch) == 1.0
    assert float(task.loss(logits, batch)) < 1e-9
    wrong = logits.clone()
    wrong[:, task.length + 2] = wrong[:, task.length + 2].roll(1, dims=-1)  # third slot wrong
    assert task.score(wrong, batch) == pytest.approx(3 / 4)
    uniform = torch.zeros_like(logits)
    assert float(task.loss(uniform, batch)) == pytest.approx(math.log(task.n_out), rel=1e-6)


def test_held_out_answers_never_appear_in_training():
    task = make_task("selective_copy")
    held = task.held_out(256).targets[:, task.length :]
    train = torch.cat([task.batch(_gen(s), 512).targets[:, task.length :] for s in range(4)])
    assert (_bucket(held, task.n_symbols) == 0).all()
    assert (_bucket(train, task.n_symbols) != 0).all()
    assert not {tuple(r) for r in held.tolist()} & {tuple(r) for r in train.tolist()}


def test_a_seed_fixes_the_data_and_a_sequence_does_not_depend_on_the_batch_size():
    task = make_task("selective_copy")
    first, again, other = task.batch(_gen(5), 32), task.batch(_gen(5), 32), task.batch(_gen(6), 32)
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.targets, again.targets)
    assert not torch.equal(first.inputs, other.inputs)
    few, many = task.held_out(3), task.held_out(40)
    assert torch.equal(few.inputs, many.inputs[:3])


def test_every_symbol_is_drawn_about_equally_often():
    task = make_task("selective_copy")
    answers = task.batch(_gen(), 2000).targets[:, task.length :].flatten()
    counts = torch.bincount(answers, minlength=task.n_symbols).double()
    assert counts.numel() == task.n_symbols
    assert ((counts / counts.sum() - 1 / task.n_symbols).abs() < 0.02).all()


@pytest.mark.parametrize(
    "settings", [{"n_copy": 0}, {"n_copy": 9, "length": 8}, {"length": 1001}, {"n_symbols": 1}]
)
def test_settings_that_make_no_task_are_refused(settings):
    with pytest.raises(ValueError):
        make_task("selective_copy", **settings)
