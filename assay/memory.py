"""Pausing Python's cyclic garbage collector around work that builds many small acyclic objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block (or, as `@gc_paused()`, the function) with the cyclic collector paused.

    Building 10^5 small tuples, lists or dataclasses in a row triggers the collector again and again,
    and each pass walks every container alive (a set's 10^7 grades, a report's rankings): pausing it
    makes such steps several times faster (it doubled the time of consolidating 40,000 documents).
    What they build holds no reference cycles, so reference counting frees it all; collection resumes
    afterwards, and in nested uses the outermost one resumes it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
