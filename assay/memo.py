"""Work done once per immutable object rather than once per call (pure).

A worker parses a golden version once and keeps the object (the app's `evaluation.runs.selectors.golden_of`);
what scoring derives from it alone (its columns, lookups, masks) is then the same for every run scored
against it. The golden model's classes are frozen and slotted (no attribute to hang a result on, no weak
reference), so `ByIdentity` keeps the last few results beside the objects they came from, found by
identity. It holds each object it caches, so an id is never reused while its entry lives; entries are
few, and the oldest goes first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """`build(obj)` for the last `size` objects asked about, by identity. `build` must be pure and the
    objects immutable: a cached value is handed out again as is, so callers must not change it."""

    def __init__(self, build: Callable[[K], V], *, size: int = 4) -> None:
        self._build = build
        self._size = size
        self._entries: dict[int, tuple[K, V]] = {}
        self._lock = threading.Lock()

    def __call__(self, obj: K) -> V:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        value = self._build(obj)  # outside the lock: two threads may both build, either result is right
        with self._lock:
            self._entries.pop(id(obj), None)
            while len(self._entries) >= self._size:
                del self._entries[next(iter(self._entries))]
            self._entries[id(obj)] = (obj, value)
        return value
