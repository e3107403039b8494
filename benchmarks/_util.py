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


QUICK_HELP = "a smoke run in seconds: tiny sizes, figures printed but not judged (exit 0)"
"""``--quick``: what ``tests/test_benchmarks_run.py`` runs, so no benchmark breaks unseen."""


def verdict(ok: bool, *, quick: bool) -> int:
    """Print whether the targets were met and return the exit code; ``--quick`` judges nothing.

    Figures from a quick run come from a handful of samples on a busy CI
    machine: they show the benchmark still runs, not how fast anything is.
    """
    if quick:
        print("targets: not judged (--quick)")
        return 0
    print("targets:", "met" if ok else "MISSED")
    return 0 if ok else 1


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile, read between samples (inclusive method)."""
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
