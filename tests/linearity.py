"""A scale test for "linear in the input size", robust to a loaded machine.

Timing one call against a fixed bound fails whenever the shared machine is
busy. Instead, the same hostile pattern is timed at a quarter of its length
and at full length (the best of three each, so a pause of the machine counts
once at most): a linear scan takes about 4x as long, a quadratic one 16x.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["assert_linear"]

_RUNS = 3
_MAX_RATIO = 9.0  # linear: ~4; quadratic: ~16


def assert_linear(fn: Callable[[str], object], text: str) -> None:
    """Fail when ``fn`` on ``text`` costs far more than 4x ``fn`` on its first quarter."""
    quarter = text[: len(text) // 4]
    small, full = _best(fn, quarter), _best(fn, text)
    floor = 0.002  # below this, timer noise dominates: too fast to be quadratic anyway
    assert full < floor or full / max(small, floor / 4) < _MAX_RATIO, (small, full)


def _best(fn: Callable[[str], object], text: str) -> float:
    timings = []
    for _ in range(_RUNS):
        started = time.perf_counter()
        fn(text)
        timings.append(time.perf_counter() - started)
    return min(timings)
