"""A scale test for "linear in the input size", robust to a loaded machine.

Timing one call against a fixed bound fails whenever the shared machine is
busy. Instead, the same hostile pattern is timed at its given length (~100 KB)
and at four times that (the best of three each, so a pause of the machine
counts once at most): a linear scan takes about 4x as long, a quadratic one
16x. The time is this thread's CPU time, not the wall clock's: other
processes (the suite's parallel workers, other users) then only slow it
through shared caches, not by taking the CPU away mid-measurement. The
sizes are large on purpose: below a few tens of KB, fixed per-call costs and
CPU caches bend even a linear scan's curve (measured: 6 KB -> 25 KB took 8x
for one pattern, 100 KB -> 400 KB 3x).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["assert_linear"]

_RUNS = 3
_MAX_RATIO = 8.0  # linear: ~4 (3-4.5 measured); quadratic: ~16


def assert_linear(fn: Callable[[str], object], text: str) -> None:
    """Fail when ``fn`` on ``text`` four times over costs far more than 4x ``fn`` on ``text``.

    ``text`` should be a pattern repeated, so that repeating it continues it.
    """
    once, four = _best(fn, text), _best(fn, text * 4)
    floor = 0.04  # below this on ~400 KB, fixed costs dominate: far too fast to be quadratic
    assert four < floor or four / max(once, floor / 4) < _MAX_RATIO, (once, four)


def _best(fn: Callable[[str], object], text: str) -> float:
    timings = []
    for _ in range(_RUNS):
        started = time.thread_time()
        fn(text)
        timings.append(time.thread_time() - started)
    return min(timings)
