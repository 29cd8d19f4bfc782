"""Process-wide serving settings (models/runtime.py): one torch thread, a settled heap."""

from __future__ import annotations

import gc

import torch

from models import runtime


def test_limit_threads_sets_torch_to_one_thread_and_back():
    before = torch.get_num_threads()
    try:
        runtime.limit_threads(1)
        assert torch.get_num_threads() == 1
        runtime.limit_threads(2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


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
