"""The shipped checkpoints meet the targets written in models/training/train.py, re-measured here on
held-out data, and the lesson's tables are what the checkpoints give."""

from __future__ import annotations

import json
from datetime import date

import pytest

from models.training import checkpoints, recurrence_table
from models.training.tasks import make_task
from models.training.train import (
    CHECKPOINT_DIR,
    COPY_LAG_FILE,
    LM_BASELINE_FILE,
    SHIPPED,
    TARGETS,
    checkpoint_name,
    copy_accuracy_by_lag,
    lm_baseline,
    measure,
    measured,
)

MAX_TOTAL_BYTES = 10 * 2**20


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_every_shipped_checkpoint_is_there_and_all_fit_in_10_mb():
    names = {checkpoint_name(make_task(n, **s), kind) for n, s, kind in SHIPPED}
    on_disk = {p.stem for p in CHECKPOINT_DIR.glob("*.safetensors")}
    assert names == on_disk
    assert sum(p.stat().st_size for p in CHECKPOINT_DIR.iterdir()) < MAX_TOTAL_BYTES
    assert not list(CHECKPOINT_DIR.glob("*.pt")) and not list(CHECKPOINT_DIR.glob("*.bin"))


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"{t.task}-{t.kind}-{t.metric}")
def test_shipped_checkpoints_meet_their_targets_on_held_out_data(target):
    task = target.task_object()
    model = checkpoints.load(CHECKPOINT_DIR / checkpoint_name(task, target.kind)).model
    value = measure(model, task, target.metric)
    assert target.met(value), f"{target}: measured {value}"


@pytest.mark.parametrize(
    "name, settings, kind", SHIPPED, ids=lambda x: x if isinstance(x, str) else None
)
def test_each_checkpoints_recorded_results_are_what_it_scores(name, settings, kind):
    task = make_task(name, **settings)
    loaded = checkpoints.load(CHECKPOINT_DIR / checkpoint_name(task, kind))
    assert loaded.task == task.config()
    now = measured(loaded.model, task)
    assert set(loaded.metrics) == set(now)
    for metric, value in now.items():
        assert loaded.metrics[metric] == pytest.approx(value, rel=1e-5, abs=1e-7)


def test_the_plain_rnns_copy_accuracy_at_lag_20_is_reported():
    table = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text())
    assert 0.0 <= table["accuracy"]["rnn"]["20"] <= 1.0
    # the measured story the lesson tells: attention and the LSTM's cell reach back 20 steps
    assert table["accuracy"]["lstm"]["20"] > table["accuracy"]["rnn"]["20"] + 0.3


def test_the_accuracy_by_lag_table_is_what_the_checkpoints_score():
    stored = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text())
    assert stored == copy_accuracy_by_lag(CHECKPOINT_DIR)


def test_the_ngram_baseline_table_is_what_the_text_and_checkpoints_give():
    stored = json.loads((CHECKPOINT_DIR / LM_BASELINE_FILE).read_text())
    assert stored == lm_baseline(CHECKPOINT_DIR)


def _recurrence_table() -> dict:
    return json.loads((CHECKPOINT_DIR / recurrence_table.TABLE_FILE).read_text())


def test_the_recurrence_table_was_measured_with_the_commands_settings():
    stored = _recurrence_table()
    assert stored["settings"] == recurrence_table.settings()
    assert stored["settings"]["tasks"]["selective_copy"] == make_task("selective_copy").config()
    assert stored["machine"]["torch_threads"] == recurrence_table.THREADS
    assert stored["machine"]["processor"]
    assert date.fromisoformat(stored["date"]) <= date.today()


def test_the_recurrence_tables_accuracies_are_what_the_checkpoints_score():
    stored = _recurrence_table()
    assert stored["accuracy"] == recurrence_table.accuracy_table(CHECKPOINT_DIR)
    shipped = {(n, kind) for n, _, kind in SHIPPED}
    for task, row in stored["accuracy"].items():
        for kind, value in row.items():
            assert (value is None) == ((task, kind) not in shipped), (task, kind)


def test_the_recurrence_table_times_every_kind_at_both_lengths():
    seconds = _recurrence_table()["seconds"]
    assert list(seconds) == list(recurrence_table.KINDS)
    for kind, by_length in seconds.items():
        assert list(by_length) == [str(n) for n in recurrence_table.LENGTHS]
        for row in by_length.values():
            assert row["training_step_s"] > 0 and row["token_whole_prefix_s"] > 0
            carried = row["token_carried_state_s"]
            # a cell's state and the Transformer's KV cache; the stacks' layers take none
            assert (carried is None) == (kind in ("ssm", "linear")), kind
            if carried is not None:
                assert carried > 0
