"""The byte-bounded LRU the attention runs are cached in (models/serving/byte_cache.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest

from models.serving.byte_cache import OBJECT_OVERHEAD, ByteLRU, size_of

MB = 2**20


def entry(megabytes: float, fill: float = 0.0) -> dict:
    return {"pattern": np.full(int(megabytes * MB) // 4, fill, dtype=np.float32), "name": "x"}


def test_an_entry_is_sized_by_its_arrays_plus_a_small_overhead():
    value = entry(1.0)
    assert MB <= size_of(value) <= MB + 10 * OBJECT_OVERHEAD + 200
    view = np.zeros(1000)[:10]  # a view keeps its whole buffer alive
    assert size_of({"a": view}) >= 8000
    shared = np.zeros(1000)
    assert size_of([shared, shared]) < 2 * 8000  # the same array counted once


def test_entries_past_the_byte_budget_go_least_recently_used_first():
    cache = ByteLRU(max_bytes=int(3.5 * MB))
    for name in "abc":
        cache.put(name, entry(1.0))
    assert cache.get("a") is not None  # "a" is now the most recent
    cache.put("d", entry(1.0))
    assert "b" not in cache and all(k in cache for k in "acd")
    assert cache.nbytes <= cache.max_bytes
    assert cache.nbytes == sum(size_of(entry(1.0)) for _ in range(3))


def test_an_entry_larger_than_the_whole_budget_is_returned_but_not_kept():
    cache = ByteLRU(max_bytes=MB)
    cache.put("small", entry(0.25))
    big = cache.put("big", entry(2.0, fill=1.0))
    assert big["pattern"][0] == 1.0
    assert "big" not in cache and "small" in cache


def test_the_count_bound_still_holds_under_the_byte_budget():
    cache = ByteLRU(max_bytes=100 * MB, max_entries=2)
    for name in "abc":
        cache.put(name, entry(0.01))
    assert len(cache) == 2 and "a" not in cache


@dataclass(frozen=True)
class Run:
    trace: dict
    positions: tuple


def test_what_a_caller_gets_is_read_only_and_its_containers_its_own():
    cache = ByteLRU(max_bytes=10 * MB)
    got = cache.put("k", Run({"p": np.arange(4.0)}, (1, 2)))
    with pytest.raises(ValueError, match="read-only"):
        got.trace["p"][0] = 9.0
    got.trace["planted"] = 1
    again = cache.get("k")
    assert "planted" not in again.trace and again.trace["p"][0] == 0.0
    assert again.trace["p"] is got.trace["p"]  # shared, never copied


def test_many_threads_asking_for_one_key_make_it_once():
    cache = ByteLRU(max_bytes=10 * MB)
    made, start = [], threading.Barrier(8)

    def make():
        made.append(1)
        return entry(0.5)

    def ask():
        start.wait()
        assert cache.get_or_make("k", make)["name"] == "x"

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert made == [1] and len(cache) == 1


def test_threads_filling_the_cache_together_keep_its_count_of_bytes_true():
    cache = ByteLRU(max_bytes=2 * MB)

    def fill(offset: int):
        for i in range(50):
            cache.get_or_make((offset, i), lambda: entry(0.1))

    threads = [threading.Thread(target=fill, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert cache.nbytes <= cache.max_bytes
    assert cache.nbytes == len(cache) * size_of(entry(0.1))


def test_a_failed_make_stores_nothing_and_raises_to_the_caller():
    cache = ByteLRU(max_bytes=MB)

    def fails():
        raise RuntimeError("no pass")

    with pytest.raises(RuntimeError):
        cache.get_or_make("k", fails)
    assert "k" not in cache and cache.nbytes == 0
    assert cache.get_or_make("k", lambda: entry(0.1))["name"] == "x"
