"""The training tasks: what each batch holds, and held-out data never seen in training."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
import torch

from models.training.synthetic_tasks import _bucket
from models.training.task_base import IGNORE
from models.training.tasks import TASKS, make_task, task_from_config
from models.training.text_tasks import Numbers, chinese_number, english_number


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


def _repeats(batch):
    """Per row: (start of the first copy, start of the second, segment length), read back
    from the scored positions."""
    out = []
    for tokens, targets in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        scored = [q for q, y in enumerate(targets) if y != IGNORE]
        second, n = scored[0], len(scored) + 1
        first = tokens.index(tokens[second])
        out.append((first, second, n))
    return out


def test_induction_repeats_a_segment_of_distinct_symbols_and_scores_only_the_repeat():
    task = make_task("induction", length=20, min_repeat=3, max_repeat=8, n_symbols=12)
    batch = task.batch(_gen(), 256)
    assert batch.inputs.shape == batch.targets.shape == (256, 20)
    for row, (first, second, n) in enumerate(_repeats(batch)):
        tokens, targets = batch.inputs[row], batch.targets[row]
        assert 3 <= n <= 8 and first + n <= second and second + n <= 20
        segment = tokens[first : first + n]
        assert torch.equal(tokens[second : second + n], segment)
        assert len(set(segment.tolist())) == n
        # filler never uses the segment's symbols: each repeated token occurred once before
        filler = torch.cat([tokens[:first], tokens[first + n : second], tokens[second + n :]])
        assert not set(filler.tolist()) & set(segment.tolist())
        # the scored positions are the second copy but its last token: what came next before
        scored = (targets != IGNORE).nonzero().flatten()
        assert scored.tolist() == list(range(second, second + n - 1))
        assert torch.equal(targets[scored], tokens[scored + 1])


def test_induction_varies_where_the_repeat_starts_its_length_and_its_distance():
    """No position or distance predicts the repeat: each one varies across sequences."""
    batch = make_task("induction").batch(_gen(), 512)
    repeats = _repeats(batch)
    firsts, seconds, lengths = (set(column) for column in zip(*repeats, strict=True))
    distances = {second - first for first, second, _ in repeats}
    assert lengths == set(range(4, 13))
    assert len(firsts) > 15 and len(seconds) > 15 and len(distances) > 15
    # the scored positions cover most of the sequence, not one fixed stretch
    scored = (batch.targets != IGNORE).any(dim=0)
    assert scored[8:-1].all()


def test_no_fixed_distance_or_position_finds_the_previous_occurrence():
    """A head that attends by position (a fixed distance back, or a fixed key position for
    each query position) would find the token to copy for few of the scored tokens."""
    batch = make_task("induction").held_out(512)
    distances, sources = Counter(), defaultdict(Counter)
    for first, second, n in _repeats(batch):
        for q in range(second, second + n - 1):
            distances[second - first] += 1
            sources[q][q - (second - first)] += 1
    assert max(distances.values()) / sum(distances.values()) < 0.15
    for counts in sources.values():
        if sum(counts.values()) >= 50:
            assert max(counts.values()) / sum(counts.values()) < 0.3


def test_an_induction_sequence_is_the_same_however_many_are_drawn():
    """Lessons show held-out sequence number i: it must not depend on the batch size."""
    task = make_task("induction")
    few, many = task.held_out(3), task.held_out(40)
    assert torch.equal(few.inputs, many.inputs[:3])
    assert torch.equal(few.targets, many.targets[:3])


def test_induction_refuses_segments_that_do_not_fit():
    with pytest.raises(ValueError):
        make_task("induction", length=20, max_repeat=12)
    with pytest.raises(ValueError):
        make_task("induction", n_symbols=10, max_repeat=10, length=32)


@pytest.mark.parametrize("name", ["copy", "selective_copy", "reverse", "induction"])
def test_held_out_sequences_never_appear_in_training(name):
    task = make_task(name)
    held_batch = task.held_out(64)
    train_batches = [task.batch(_gen(s), 256) for s in range(4)]
    if name == "induction":
        # the held-out key: the first `min_repeat` symbols of the repeated segment
        width = task.min_repeat

        def keys(batch):
            return torch.stack(
                [batch.inputs[i, f : f + width] for i, (f, _, _) in enumerate(_repeats(batch))]
            )
    elif name == "selective_copy":
        # the held-out key: the symbols to copy, wherever they were placed

        def keys(batch):
            return batch.targets[:, task.length :]
    else:
        width = task.length

        def keys(batch):
            return batch.inputs[:, :width]

    held = keys(held_batch)
    train = torch.cat([keys(b) for b in train_batches])
    n_symbols = task.n_symbols
    assert (_bucket(held, n_symbols) == 0).all()
    assert (_bucket(train, n_symbols) != 0).all()
    held_rows = {tuple(r) for r in held.tolist()}
    assert not held_rows & {tuple(r) for r in train.tolist()}


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
