"""Small timing helpers shared by the benchmarks (wall-clock, median of repeats)."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable


def per_call_us(fn: Callable[[], object], *, number: int, repeat: int = 15) -> float:
    """Median over ``repeat`` runs of the mean time of one call, in microseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter_ns() - start) / number / 1000)
    return statistics.median(samples)


def machine() -> str:
    """One line describing where the figures were measured."""
    return f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}"
