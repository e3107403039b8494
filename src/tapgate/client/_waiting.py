"""What a ``tapgate run`` user sees while a request waits: one line, then a countdown.

Apart from :mod:`tapgate.client._run` so that the waiting, the signals and the
execution each stay one readable concept.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import TextIO

from tapgate.gate.models import Request

__all__ = ["Waiting", "countdown_line", "is_terminal"]

_SHOWN = 60  # characters of a command shown on the countdown line


def countdown_line(command: str, request_id: str, seconds_left: float) -> str:
    """The line redrawn every second while a terminal user waits for a tap."""
    shown = command if len(command) <= _SHOWN else command[: _SHOWN - 1] + "…"
    left = max(int(seconds_left), 0)
    hours, rest = divmod(left, 3600)
    minutes, seconds = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
    return f"tapgate: waiting for approval of `{shown}` (request {request_id[:4]}…): {clock} left"


class Waiting:
    """What the user sees while a request waits: one line, then a countdown on a terminal."""

    def __init__(self, err: TextIO, command: str, timeout: float | None) -> None:
        self.err = err
        self.command = command
        self.request: Request | None = None
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, request: Request) -> None:
        self.request = request
        asked = ", ".join(request.approvers) or "the approvers"
        self.err.write(
            f"tapgate: asked {asked} to approve `{self.command}` (request {request.id})\n"
        )
        self.err.flush()
        if is_terminal(self.err):
            thread = threading.Thread(target=self._draw, daemon=True)
            thread.start()
            self._thread = thread  # only a started thread is ever joined

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
            self.err.write("\r\x1b[K")
            self.err.flush()

    def _draw(self) -> None:
        assert self.request is not None
        expires = self.request.expires_at
        while not self._stop.is_set():
            left = (expires - datetime.now(UTC)).total_seconds()
            if self._deadline is not None:
                left = min(left, self._deadline - time.monotonic())
            line = countdown_line(self.command, self.request.id, left)
            self.err.write(f"\r\x1b[K{line}")
            self.err.flush()
            self._stop.wait(1.0)


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
