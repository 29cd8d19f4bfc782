"""A least-recently-used cache bounded by the bytes it holds, shared by every visitor.

Streamlit's caches are bounded by a count of entries only, and one entry of a trace can
be a few kB or several MB (MiniLM's attention on 128 tokens is ~6 MB): 128 entries of
long sentences held ~770 MB. This one sizes each entry as the bytes of its numpy arrays
(plus a small allowance for every other object in it) and drops the least recently used
entries once a byte budget is passed.

Entries are shared, never copied: their arrays are made read-only, and what a caller
gets is a fresh shell of dicts, lists and dataclasses around them, so a request can
neither change a stored number nor add a key another visitor would see.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

# What an object that is not an array is counted as, at least: a Python object's header
# and its slot in the container holding it.
OBJECT_OVERHEAD = 64
# Deeper than any trace: a structure nested further is counted as one object there.
MAX_DEPTH = 32


def _children(value) -> list:
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    return []


def size_of(value) -> int:
    """Bytes `value` holds: its numpy arrays' buffers (an array viewing another counts the
    buffer it keeps alive, once), plus OBJECT_OVERHEAD or more for every other object."""
    seen: set[int] = set()
    total = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            owner = item.base if isinstance(item.base, np.ndarray) else item
            if owner is item or id(owner) not in seen:
                seen.add(id(owner))
                total += owner.nbytes + OBJECT_OVERHEAD
            continue
        total += max(OBJECT_OVERHEAD, sys.getsizeof(item, OBJECT_OVERHEAD))
        if depth < MAX_DEPTH:
            stack.extend((child, depth + 1) for child in _children(item))
    return total


def freeze(value, depth: int = 0):
    """`value` with every numpy array in it made read-only (in place); returns `value`."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif depth < MAX_DEPTH:
        for child in _children(value):
            freeze(child, depth + 1)
    return value


def shell(value, depth: int = 0):
    """A copy of the containers around `value`'s arrays (dicts, lists, tuples, dataclasses),
    sharing the arrays and every other object: cheap, and changing it changes no entry."""
    if depth >= MAX_DEPTH or isinstance(value, np.ndarray):
        return value
    if type(value) is dict:
        return {key: shell(item, depth + 1) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(shell(item, depth + 1) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        copied = copy.copy(value)
        for f in dataclasses.fields(value):
            object.__setattr__(copied, f.name, shell(getattr(value, f.name), depth + 1))
        return copied
    return value


class ByteLRU:
    """Entries by key, the least recently used dropped once they hold over `max_bytes`
    (or number over `max_entries`). An entry larger than the whole budget is not kept.
    Safe to use from many threads; a key being made is made once, the others wait."""

    def __init__(self, max_bytes: int, max_entries: int | None = None):
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._making: dict[Hashable, list] = {}  # key → [lock, threads using it]

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def _stored(self, key: Hashable):
        """The stored entry (made most recent), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found

    def get(self, key: Hashable, default=None):
        found = self._stored(key)
        return default if found is None else shell(found[0])

    def put(self, key: Hashable, value):
        """Store `value` (its arrays made read-only); returns what a `get` would."""
        freeze(value)
        size = size_of(value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size <= self.max_bytes:
                self._entries[key] = (value, size)
                self._bytes += size
                self._evict()
        return shell(value)

    def _evict(self) -> None:
        too_many = self.max_entries is not None and len(self._entries) > self.max_entries
        while self._entries and (self._bytes > self.max_bytes or too_many):
            _, (_, size) = self._entries.popitem(last=False)
            self._bytes -= size
            too_many = self.max_entries is not None and len(self._entries) > self.max_entries

    def get_or_make(self, key: Hashable, make: Callable[[], Any]):
        """The entry for `key`, made by `make()` if there is none (an exception is raised
        to the caller and nothing is stored)."""
        found = self._stored(key)
        if found is not None:
            return shell(found[0])
        with self._lock:
            making = self._making.setdefault(key, [threading.Lock(), 0])
            making[1] += 1
        try:
            with making[0]:
                found = self._stored(key)
                if found is not None:
                    return shell(found[0])
                return self.put(key, make())
        finally:
            with self._lock:
                making[1] -= 1
                if making[1] == 0:
                    del self._making[key]
