"""The command that trains: every shipped checkpoint, or one run (models/training/train.py).

python -m models.training.train --all
python -m models.training.train lm --text zh --context 32 --model transformer
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from models.training import checkpoints
from models.training import train as training
from models.training.tasks import make_task
from models.training.train import (
    CHECKPOINT_DIR,
    checkpoint_name,
    make_all,
    measured,
    missed_targets,
    train,
    write_tables,
)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m models.training.train", description=training.__doc__.split("\n")[0]
    )
    parser.add_argument(
        "task", nargs="?", help="copy, selective_copy, reverse, adding, induction, lm, numbers"
    )
    parser.add_argument("--all", action="store_true", help="make every shipped checkpoint")
    parser.add_argument(
        "--tables", action="store_true", help="only re-measure the lesson's tables from --out"
    )
    parser.add_argument(
        "--model", default="lstm", help="rnn, lstm, gru, transformer, encdec, ssm, linear"
    )
    parser.add_argument("--lag", type=int, help="copy: steps between a symbol and its copy")
    parser.add_argument("--T", type=int, help="adding: the sequence length")
    parser.add_argument(
        "--length", type=int, help="selective_copy: the blanks and symbols before the markers"
    )
    parser.add_argument("--text", help="lm: the text to learn, bilingual (default) or zh")
    parser.add_argument("--context", type=int, help="lm: characters read at a time")
    parser.add_argument("--steps", type=int, help="default: the recipe's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (2 shared cores)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    torch.set_num_threads(args.threads)
    if args.all:
        make_all(args.out, args.seed)
        return
    if args.tables:
        write_tables(args.out)
        return
    if not args.task:
        raise SystemExit("name a task, or --all")
    given = (
        ("lag", args.lag),
        ("T", args.T),
        ("length", args.length),
        ("text", args.text),
        ("context", args.context),
    )
    settings = {k: v for k, v in given if v is not None}
    task = make_task(args.task, **settings)
    every = 50

    def report(step: int, loss: float, score: float) -> bool:
        if step % every == 0:
            print(f"step {step:5d}  loss {loss:.4f}  {task.metric} {score:.4f}", flush=True)
        return True

    started = time.perf_counter()
    trainer = train(task, args.model, args.steps, args.seed, report)
    seconds = time.perf_counter() - started
    metrics = measured(trainer.model, task)
    print(f"held-out: {metrics}  ({seconds:.1f} s)")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / checkpoint_name(task, args.model)
    checkpoints.save(
        path, trainer.model, task=task.config(), training=trainer.metadata(), metrics=metrics
    )
    print(f"saved {path}.safetensors and {path}.json")
    missed = missed_targets(task, args.model, metrics)
    if missed:
        raise SystemExit(f"missed the targets in models/training/train.py: {missed}")
