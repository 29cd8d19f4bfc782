"""`python -m bench.training`: wall-clock time for each shipped target to be reached.

Trains every model named in models.training.train.TARGETS from scratch with its recipe and seed 0
(one run serves every target of the same task and model), on one torch thread by default
(the machine has two shared cores; `--threads 2` to compare), measuring on the held-out
data every `--every` steps. For each target: the training time to the first measurement
that meets it (evaluation excluded), and the CPU time the process spent in those steps (on
a shared machine the wall clock also counts the time other processes held the cores; the
load average before and after goes with the table). Goal: at most 60 s per task on this
machine. The table also goes to bench/results/training.md. Not a test: nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import torch

from bench.server import RESULTS_DIR
from models.training.train import TARGETS, Target, Trainer, measure

GOAL_SECONDS = 60.0


@dataclass
class Reached:
    """When one target was first met: wall-clock and CPU seconds of training (evaluation
    excluded), the step, and the value measured then (or the last one if never met)."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0
    steps: int = -1
    value: float = float("nan")


def times_to_targets(targets: list[Target], every: int, limit_steps: int) -> list[Reached]:
    """Train one model (the targets' common task and kind) until every target is met,
    measuring each on held-out data every `every` steps."""
    task = targets[0].task_object()
    trainer = Trainer(task, targets[0].kind, seed=0)
    reached = [Reached() for _ in targets]
    seconds = cpu_seconds = 0.0
    while trainer.step_count < limit_steps and any(r.steps < 0 for r in reached):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(every):
            trainer.step()
        seconds += time.perf_counter() - wall
        cpu_seconds += time.process_time() - cpu
        trainer.model.eval()
        with torch.no_grad():
            for target, result in zip(targets, reached, strict=True):
                if result.steps < 0:
                    result.value = measure(trainer.model, task, target.metric)
                    if target.met(result.value):
                        result.seconds, result.cpu_seconds = seconds, cpu_seconds
                        result.steps = trainer.step_count
        trainer.model.train()
    return reached


def _groups(targets) -> dict[tuple, list[Target]]:
    """Targets that share a task, its settings and a model: one training run serves them."""
    groups: dict[tuple, list[Target]] = {}
    for target in targets:
        groups.setdefault((target.task, target.settings, target.kind), []).append(target)
    return groups


def _row(target: Target, result: Reached) -> str:
    sign = "≤" if target.metric == "mse" else "≥"
    settings = ", ".join(f"{k}={v}" for k, v in target.settings)
    met = result.steps > 0
    reached = str(result.steps) if met else f"not reached ({result.value:.4g})"
    return (
        f"| {target.task} {settings} | {target.kind} | {target.metric} {sign} "
        f"{target.threshold} (measured {result.value:.4g}) | {reached} | "
        f"{result.seconds:.1f} | {result.cpu_seconds:.1f} | "
        f"{'yes' if met and result.seconds <= GOAL_SECONDS else 'no'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.training")
    parser.add_argument("--every", type=int, default=25, help="steps between measurements")
    parser.add_argument("--limit", type=int, default=3000, help="give up after this many steps")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--only", help="only the targets of this task (copy, adding, induction)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    rows = [
        "| task | model | target | reached at step | training time (s) | CPU time (s) "
        "| within 60 s |",
        "|---|---|---|---|---|---|---|",
    ]
    chosen = [t for t in TARGETS if args.only in (None, t.task)]
    for targets in _groups(chosen).values():
        for target, result in zip(
            targets, times_to_targets(targets, args.every, args.limit), strict=True
        ):
            rows.append(_row(target, result))
            print(rows[-1], flush=True)
    load_after = os.getloadavg()[0]
    text = "\n".join(rows) + (
        f"\n\n{args.threads} torch thread(s); load average (1 min) {load_before:.1f} at the "
        f"start and {load_after:.1f} at the end, on {os.cpu_count()} cores.\n"
    )
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "training.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
