"""The training lab's tasks: data made on the fly, a loss and a score for each.

Every task makes batches from a `torch.Generator`, so a seed fixes the data. Held-out data
never appears in training: the synthetic tasks split the space of sequences by a hash of
their content (a tenth is held out), the language model holds out the end of its text, and
the number task holds out a fixed tenth of the numbers.

- `copy`: remember `length` symbols and write each one exactly `lag` steps after it came.
- `selective_copy`: `n_copy` symbols at random places among blanks, then as many recall
  markers: write the symbols in order (Gu & Dao 2023, "Mamba", section 3.1).
- `reverse`: read `length` symbols, then write them backwards.
- `adding`: T steps of (value, marker); at the end, the sum of the two marked values.
- `induction`: a segment of random tokens, then the same segment again, at positions and
  distances that change from sequence to sequence, among filler; predict each next token
  of the repeat (possible only by finding the previous occurrence: an induction head).
- `lm`: the next character of a bilingual English and Chinese text (assets/text/).
- `numbers`: an encoder–decoder turns English number words into Chinese numerals
  ("three hundred forty two" → 三百四十二).

This module names them: the synthetic tasks are in synthetic_tasks.py, the tasks on text
(`lm`, `numbers`) in text_tasks.py, and what every task has (a batch, a loss, a score, the
held-out seed) in task_base.py.
"""

from __future__ import annotations

from models.training.synthetic_tasks import Adding, Copy, Induction, Reverse, SelectiveCopy
from models.training.task_base import Task
from models.training.text_tasks import CharLM, Numbers

TASKS = {
    "copy": Copy,
    "selective_copy": SelectiveCopy,
    "reverse": Reverse,
    "adding": Adding,
    "induction": Induction,
    "lm": CharLM,
    "numbers": Numbers,
}


def make_task(name: str, **settings) -> Task:
    if name not in TASKS:
        raise ValueError(f"task must be one of {tuple(TASKS)}, got {name!r}")
    return TASKS[name](**settings)


def task_from_config(raw: dict) -> Task:
    raw = dict(raw)
    return make_task(raw.pop("name", ""), **raw)
