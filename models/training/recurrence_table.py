"""The measured table of recurrence against attention: what each kind of model learns, and
what a training step and a generated token cost it at two lengths.

    python -m models.training.recurrence_table   # writes assets/checkpoints/recurrence_table.json

- accuracy: held-out accuracy of every shipped checkpoint on selective copying and on
  induction (models/training/train.py makes them; None where a kind ships none);
- seconds per training step: one step of the kind's own recipe (its size, batch and
  learning rate) on selective copying with `length` blanks and symbols before its markers;
- seconds per generated token after `length` tokens, two ways: reading the whole prefix
  again, as `SequenceModel.predict` does (every kind can; the LSTM by torch's fused kernel,
  the others by their own code), and one step from what was kept of the prefix where the
  code has such a step: a recurrent cell's state, the Transformer's KV cache
  (models/analysis/kv_cache.py). None for the state-space and linear-attention stacks:
  their layers run a whole sequence per call and take no state in.

Times are medians over `REPEATS` runs after `WARMUP` unmeasured ones, on one torch thread;
the file says on what machine and when. Timed models are built from their spec and seed
(no training): the time does not depend on what the weights are. Accuracies are
re-measured from the checkpoints by the tests; times are not (they are the machine's).
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import torch

from models.nets.task_models import SequenceModel
from models.training import checkpoints
from models.training.tasks import make_task
from models.training.train import (
    CHECKPOINT_DIR,
    RECURRENCE_KINDS,
    SELECTIVE_COPY,
    Trainer,
    checkpoint_name,
    evaluate,
    spec_for,
)

TABLE_FILE = "recurrence_table.json"
KINDS = RECURRENCE_KINDS
TASKS = {"selective_copy": dict(SELECTIVE_COPY), "induction": {}}
LENGTHS = (64, 512)
REPEATS = 7
WARMUP = 2
THREADS = 1
SEED = 0


def settings() -> dict:
    """What the table was measured with: the tests hold the file's to these."""
    return {
        "kinds": list(KINDS),
        "tasks": {name: make_task(name, **s).config() for name, s in TASKS.items()},
        "lengths": list(LENGTHS),
        "repeats": REPEATS,
        "warmup": WARMUP,
        "threads": THREADS,
        "seed": SEED,
        "timed_task": "selective_copy",
    }


def accuracy_table(directory: Path) -> dict[str, dict[str, float | None]]:
    """Held-out accuracy per task and kind, from the checkpoints in `directory`."""
    table: dict[str, dict[str, float | None]] = {}
    for name, task_settings in TASKS.items():
        task = make_task(name, **task_settings)
        table[name] = {}
        for kind in KINDS:
            stem = directory / checkpoint_name(task, kind)
            if not checkpoints.paths(stem)[0].exists():
                table[name][kind] = None
                continue
            model = checkpoints.load(stem).model
            table[name][kind] = round(evaluate(model, task)["accuracy"], 4)
    return table


def median_seconds(run: Callable[[], object], repeats: int = REPEATS, warmup: int = WARMUP):
    """The median wall-clock time of `run()` over `repeats` calls, after `warmup` calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def timed_task(length: int):
    """Selective copying at body length `length`, the other settings as shipped."""
    return make_task("selective_copy", **{**TASKS["selective_copy"], "length": length})


def training_step_seconds(kind: str, length: int) -> float:
    trainer = Trainer(timed_task(length), kind, SEED)
    return median_seconds(trainer.step)


def _prefix(model: SequenceModel, length: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(SEED)
    return torch.randint(model.spec.n_in, (1, length), generator=generator)


def whole_prefix_seconds(kind: str, length: int) -> float:
    """The next token's logits after `length` tokens, by reading all of them again."""
    task = timed_task(length)
    model = SequenceModel(spec_for(task, kind), SEED).freeze()
    ids = _prefix(model, length)
    return median_seconds(lambda: model.predict(ids)[0, -1].argmax())


def carried_step_seconds(kind: str, length: int) -> float | None:
    """The next token's logits from what was kept of the `length` tokens before: one step
    of a recurrent cell from its state, or one Transformer step against its KV cache
    (models/analysis/kv_cache.py). None for a model that has no such step."""
    task = timed_task(length)
    model = SequenceModel(spec_for(task, kind), SEED).freeze()
    ids = _prefix(model, length + 1)
    if kind == "transformer":
        from models.analysis.kv_cache import cached_step, prefill

        past = prefill(model.core, ids[0, :length].tolist())
        token = int(ids[0, length])
        return median_seconds(lambda: cached_step(model.core, token, length, past, model.W_U))
    if not model.spec.is_recurrent:
        return None
    with torch.no_grad():
        trace = model.core(model.embed(ids[:, :length]))
        H = trace["H"][:, -1]
        state = (H, trace["C"][:, -1] if "C" in trace else torch.zeros_like(H))
        x = model.embed(ids[:, length:])

        def step():
            H_next = model.core(x, state=state)["H"][:, -1]
            return (H_next @ model.W_U + model.b_U).argmax()

        return median_seconds(step)


def timing_table() -> dict[str, dict[str, dict[str, float | None]]]:
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for kind in KINDS:
        out[kind] = {}
        for length in LENGTHS:
            carried = carried_step_seconds(kind, length)
            out[kind][str(length)] = {
                "training_step_s": _rounded(training_step_seconds(kind, length)),
                "token_whole_prefix_s": _rounded(whole_prefix_seconds(kind, length)),
                "token_carried_state_s": None if carried is None else _rounded(carried),
            }
    return out


def _rounded(seconds: float) -> float:
    return float(f"{seconds:.3g}")


def machine() -> dict:
    return {
        "processor": platform.processor() or platform.machine(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }


def measure(directory: Path = CHECKPOINT_DIR) -> dict:
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        return {
            "settings": settings(),
            "date": date.today().isoformat(),
            "machine": machine(),
            "accuracy": accuracy_table(directory),
            "chance": {name: 1 / make_task(name, **s).n_symbols for name, s in TASKS.items()},
            "seconds": timing_table(),
        }
    finally:
        torch.set_num_threads(before)


def main(directory: Path = CHECKPOINT_DIR) -> None:
    table = measure(directory)
    (directory / TABLE_FILE).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    for task, row in table["accuracy"].items():
        print(task, {k: v for k, v in row.items()})
    for kind, by_length in table["seconds"].items():
        print(kind, by_length)


if __name__ == "__main__":
    main()
