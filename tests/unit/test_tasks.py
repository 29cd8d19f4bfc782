"""The training tasks: what each batch holds, and held-out data never seen in training."""

from __future__ import annotations

import pytest
import torch

from models.tasks import (
    IGNORE,
    TASKS,
    Numbers,
    _bucket,
    chinese_number,
    english_number,
    make_task,
    task_from_config,
)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_copy_writes_each_symbol_exactly_lag_steps_after_it_came():
    task = make_task("copy", lag=7, length=3)
    batch = task.batch(_gen(), 16)
    assert batch.inputs.shape == batch.targets.shape == (16, 10)
    scored = batch.targets != IGNORE
    assert scored[:, 7:].all() and not scored[:, :7].any()
    assert torch.equal(batch.targets[:, 7:], batch.inputs[:, :3])
    assert (batch.inputs[:, 3:7] == task.vocab.index("·")).all()
    assert (batch.inputs[:, 7:] == task.vocab.index("?")).all()


def test_copy_refuses_a_lag_shorter_than_the_sequence():
    with pytest.raises(ValueError):
        make_task("copy", lag=3, length=5)


def test_reverse_targets_are_the_symbols_backwards():
    task = make_task("reverse", length=4)
    batch = task.batch(_gen(), 8)
    assert torch.equal(batch.targets[:, 4:], batch.inputs[:, :4].flip(1))


def test_adding_target_is_the_sum_of_the_two_marked_values():
    task = make_task("adding", T=20)
    batch = task.batch(_gen(), 32)
    values, markers = batch.inputs[..., 0], batch.inputs[..., 1]
    assert (markers.sum(dim=1) == 2).all()
    assert (markers[:, :10].sum(dim=1) == 1).all()  # one in each half
    torch.testing.assert_close(batch.targets, (values * markers).sum(dim=1))
    # predicting the mean (1) scores the variance of the sum, 1/6
    assert abs(float(((batch.targets - 1) ** 2).mean()) - 1 / 6) < 0.08


def test_induction_repeats_distinct_symbols_and_scores_only_the_repeat():
    task = make_task("induction", half=5, n_symbols=9)
    batch = task.batch(_gen(), 16)
    first, second = batch.inputs[:, :5], batch.inputs[:, 5:]
    assert torch.equal(first, second)
    assert all(len(set(row.tolist())) == 5 for row in first)
    assert (batch.targets[:, :5] == IGNORE).all() and (batch.targets[:, -1] == IGNORE).all()
    assert torch.equal(batch.targets[:, 5:-1], batch.inputs[:, 6:])


@pytest.mark.parametrize("name", ["copy", "reverse", "induction"])
def test_held_out_sequences_never_appear_in_training(name):
    task = make_task(name)
    held = task.held_out(64).inputs
    train = torch.cat([task.batch(_gen(s), 256).inputs for s in range(4)])
    n_symbols = task.n_symbols
    width = task.length if name != "induction" else task.half
    assert (_bucket(held[:, :width], n_symbols) == 0).all()
    assert (_bucket(train[:, :width], n_symbols) != 0).all()
    held_rows = {tuple(r) for r in held[:, :width].tolist()}
    assert not held_rows & {tuple(r) for r in train[:, :width].tolist()}


def test_language_model_holds_out_the_end_of_a_bilingual_text():
    task = make_task("lm", context=16)
    train_text, held_text = task.split()
    assert any("\u4e00" <= c <= "\u9fff" for c in held_text)
    assert any(c.isascii() and c.isalpha() for c in held_text)
    batch = task.held_out()
    assert torch.equal(batch.targets[:, :-1], batch.inputs[:, 1:])
    decoded = "".join(task.vocab[i] for i in batch.inputs.flatten().tolist())
    assert decoded == held_text[: len(decoded)]
    assert len(decoded) > 0.9 * len(held_text) - 32


@pytest.mark.parametrize(
    "n, english, chinese",
    [
        (0, "zero", "零"),
        (7, "seven", "七"),
        (10, "ten", "十"),
        (15, "fifteen", "十五"),
        (40, "forty", "四十"),
        (42, "forty two", "四十二"),
        (100, "one hundred", "一百"),
        (105, "one hundred five", "一百零五"),
        (110, "one hundred ten", "一百一十"),
        (115, "one hundred fifteen", "一百一十五"),
        (342, "three hundred forty two", "三百四十二"),
        (999, "nine hundred ninety nine", "九百九十九"),
    ],
)
def test_numbers_in_english_and_chinese(n, english, chinese):
    assert " ".join(english_number(n)) == english
    assert chinese_number(n) == chinese


def test_number_batches_decode_back_and_hold_out_a_tenth():
    task = Numbers()
    held, train = task.numbers(True), task.numbers(False)
    assert len(held) == 100 and not set(held) & set(train)
    batch = task.held_out()
    pad = task.vocab.index("[PAD]")
    for row, n in enumerate(held[:20]):
        words = [task.vocab[i] for i in batch.inputs[row].tolist() if i != pad]
        assert words == english_number(n)
        target = [t for t in batch.targets[row].tolist() if t != IGNORE]
        assert task.decode(target) == chinese_number(n)
        # the decoder reads the target shifted right, starting at [BOS]
        assert task.vocab[int(batch.decoder_inputs[row, 0])] == "[BOS]"


@pytest.mark.parametrize("name", list(TASKS))
def test_a_task_is_rebuilt_from_its_config(name):
    task = make_task(name)
    assert task_from_config(task.config()) == task


def test_unknown_tasks_are_refused():
    with pytest.raises(ValueError):
        make_task("sorting")
