"""Process-wide serving settings (models/serving/runtime.py): one torch thread, a settled heap."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from models.serving import runtime


def test_limit_threads_sets_torch_to_one_thread_and_back():
    before = torch.get_num_threads()
    try:
        runtime.limit_threads(1)
        assert torch.get_num_threads() == 1
        runtime.limit_threads(2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_math_thread_counts_are_set_unless_the_environment_says():
    environ = {"OMP_NUM_THREADS": "3"}
    runtime.math_threads_from_environment(environ)
    assert environ == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"}


# In a fresh process (started without the two variables), as a server starts: the app's
# models loaded, one torch thread, then the first tanh of each of several new threads
# (each rerun's thread), counting the process's threads around it. Prints the largest
# growth.
_NEW_THREAD_PROBE = """
import os, threading
import models.nets.transformer
import torch
from models.serving.runtime import limit_threads
limit_threads()
x = torch.randn(21, 64)
torch.tanh(x)
def count():
    return len(os.listdir("/proc/self/task"))
def probe(out):
    before = count(); torch.tanh(x); out.append(count() - before)
grown = []
for _ in range(6):
    thread = threading.Thread(target=probe, args=(grown,)); thread.start(); thread.join()
print(max(grown))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_a_new_threads_first_vector_operation_starts_no_helper_thread():
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in runtime.MATH_THREAD_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", _NEW_THREAD_PROBE],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split()[-1] == "0", done.stdout + done.stderr


def test_settled_objects_are_skipped_by_a_full_collection_yet_still_freed_when_unused():
    class Node:
        pass

    kept = [Node() for _ in range(1000)]
    runtime.settle_heap()
    try:
        frozen = gc.get_freeze_count()
        assert frozen >= 1000
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in tracked for o in kept)  # out of the collector's sight
        del kept  # refcounting still frees frozen objects
        assert gc.get_freeze_count() < frozen
    finally:
        gc.unfreeze()


def test_a_rerun_s_cyclic_garbage_is_still_collected_after_settling():
    runtime.settle_heap()
    try:

        class Cycle:
            pass

        a, b = Cycle(), Cycle()
        a.other, b.other = b, a
        del a, b
        assert gc.collect() >= 2
    finally:
        gc.unfreeze()


def test_settle_heap_once_settles_a_name_only_the_first_time(monkeypatch):
    calls = []
    monkeypatch.setattr(runtime, "settle_heap", lambda: calls.append(1))
    monkeypatch.setattr(runtime, "_settled", set())
    assert runtime.settle_heap_once("heads") is True
    assert runtime.settle_heap_once("heads") is False
    assert runtime.settle_heap_once("positional") is True
    assert len(calls) == 2


def test_a_loader_asking_to_settle_gets_one_settling_at_the_end_of_the_run(monkeypatch):
    calls = []
    monkeypatch.setattr(runtime, "settle_heap", lambda: calls.append(1))
    monkeypatch.setattr(runtime, "_settled", {"heads"})
    monkeypatch.setattr(runtime, "_settle_asked", threading.Event())
    assert runtime.settle_heap_once("heads") is False
    runtime.settle_heap_after_run()  # a model was loaded during this run
    assert calls == []  # nothing settles inside the loader, before the page is drawn
    assert runtime.settle_heap_once("heads") is True
    assert runtime.settle_heap_once("heads") is False
    assert calls == [1]


def _overlapped(name: str) -> bool:
    """Whether two threads were inside `first_runs_in_turn(name)` at the same time."""
    inside, release = threading.Event(), threading.Event()
    second_entered = threading.Event()

    def first():
        with runtime.first_runs_in_turn(name):
            inside.set()
            release.wait(timeout=10)

    def second():
        inside.wait(timeout=10)
        with runtime.first_runs_in_turn(name):
            second_entered.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    overlapped = second_entered.wait(timeout=2)  # bounded wait, not a timing assertion
    release.set()
    for thread in threads:
        thread.join(timeout=10)
    return overlapped


def test_first_runs_take_turns_and_later_runs_go_in_parallel(monkeypatch):
    monkeypatch.setattr(runtime, "settle_heap", lambda: None)
    monkeypatch.setattr(runtime, "_settled", set())
    assert not _overlapped("heads")  # no run of the page has finished yet
    runtime.settle_heap_once("heads")
    assert _overlapped("heads")
    assert not _overlapped("masks")


def test_a_failed_first_run_lets_the_next_one_in(monkeypatch):
    monkeypatch.setattr(runtime, "_settled", set())
    try:
        with runtime.first_runs_in_turn("heads"):
            raise RuntimeError("the page failed")
    except RuntimeError:
        pass
    assert not _overlapped("heads")  # still in turn, and the lock was given back


def test_no_more_pages_than_the_slots_run_at_once_and_every_one_runs():
    inside, most, finished = [0], [0], []
    lock = threading.Lock()
    full, go = threading.Event(), threading.Event()

    def page(n):
        with runtime.runs_in_turn():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                if inside[0] == runtime.PAGES_AT_ONCE:
                    full.set()
            go.wait(timeout=10)
            with lock:
                inside[0] -= 1
                finished.append(n)

    threads = [threading.Thread(target=page, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    assert full.wait(timeout=10)  # the slots fill while every page waits to go on
    go.set()
    for thread in threads:
        thread.join(timeout=10)
    assert most[0] == runtime.PAGES_AT_ONCE
    assert sorted(finished) == list(range(6))


def test_a_failed_page_gives_its_turn_back():
    for _ in range(runtime.PAGES_AT_ONCE + 1):
        try:
            with runtime.runs_in_turn():
                raise RuntimeError("the page failed")
        except RuntimeError:
            pass
    assert runtime.PAGE_SLOTS.holding() == 0
