"""The settings that keep reruns cheap are in force when the real pages run."""

from __future__ import annotations

import threading

import torch
from conftest import open_lesson

from components.ui.runs.shared import load_checkpoint, load_recurrent
from models.serving import runtime


def test_a_lesson_settles_the_heap_after_its_first_complete_run(lesson_path):
    at = open_lesson(lesson_path, "The cat sat on the mat")
    assert not at.exception
    assert lesson_path in runtime._settled


def test_the_model_loaders_leave_torch_on_one_thread():
    torch.set_num_threads(2)
    # Loaded afresh, as on a new server: the lesson's constructed and trained weights.
    load_recurrent.clear()
    load_checkpoint.clear()
    at = open_lesson("recurrent", "Every loader keeps torch on one thread")
    assert not at.exception
    # Each rerun runs in a new thread, which takes torch's process-wide setting.
    seen = []
    worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    worker.start()
    worker.join()
    assert seen == [1]
