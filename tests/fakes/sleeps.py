"""A fake ``sleep`` for code under test that backs off: it records the delays and returns at once.

The notifiers and the retry helpers take their ``sleep`` as an argument; the
tests inject this one, so no test waits for a backoff and each can assert the
delays that were asked for. It was written out in three notifier test modules.
"""

from __future__ import annotations

__all__ = ["Sleeps"]


class Sleeps:
    """An injected sleep that records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
