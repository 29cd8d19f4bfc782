"""`python -m bench.training`: wall-clock time for each shipped target to be reached.

Trains every model named in models.train.TARGETS from scratch with its recipe and seed 0,
on one torch thread by default (the machine has two shared cores; `--threads 2` to
compare), measuring on the held-out data every `--every` steps; the time to the first
measurement that meets the target is reported (evaluation time excluded). The load
average before and after the run goes with the table: other processes slow it down.
Goal: at most 60 s per task on this machine. The table also goes to
bench/results/training.md. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from bench.server import RESULTS_DIR
from models.train import TARGETS, Target, Trainer, measure

GOAL_SECONDS = 60.0


def time_to_target(target: Target, every: int, limit_steps: int) -> tuple[float, int, float]:
    """(training seconds, steps, measured value) when first met; steps = -1 if never."""
    task = target.task_object()
    trainer = Trainer(task, target.kind, seed=0)
    seconds, value = 0.0, float("nan")
    while trainer.step_count < limit_steps:
        started = time.perf_counter()
        for _ in range(every):
            trainer.step()
        seconds += time.perf_counter() - started
        trainer.model.eval()
        with torch.no_grad():
            value = measure(trainer.model, task, target.metric)
        trainer.model.train()
        if target.met(value):
            return seconds, trainer.step_count, value
    return seconds, -1, value


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
        "| task | model | target | reached at step | training time (s) | within 60 s |",
        "|---|---|---|---|---|---|",
    ]
    for target in (t for t in TARGETS if args.only in (None, t.task)):
        seconds, steps, value = time_to_target(target, args.every, args.limit)
        sign = "≤" if target.metric == "mse" else "≥"
        settings = ", ".join(f"{k}={v}" for k, v in target.settings)
        reached = str(steps) if steps > 0 else f"not reached ({value:.4g})"
        rows.append(
            f"| {target.task} {settings} | {target.kind} | {target.metric} {sign} "
            f"{target.threshold} (measured {value:.4g}) | {reached} | {seconds:.1f} | "
            f"{'yes' if steps > 0 and seconds <= GOAL_SECONDS else 'no'} |"
        )
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
