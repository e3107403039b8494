"""How the operator's commands write: colour where a person reads, durations and times.

Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)
or ``TERM=dumb``: piped output, logs and CI keep plain text that ``grep`` and
diffs can use. Durations read as ``14m 53s`` and times carry their zone, since
an operator compares them with a chat message written in another one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal, TextIO

__all__ = ["Style", "colour_enabled", "format_time", "paint", "readable_duration"]

Style = Literal["bold", "dim", "red", "green", "yellow"]

_CODES: Mapping[Style, str] = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
}


def colour_enabled(stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Whether text written to ``stream`` may carry ANSI colour."""
    environ = os.environ if env is None else env
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def paint(text: str, style: Style, stream: TextIO | None = None) -> str:
    """``text`` in ``style`` when ``stream`` (default: stdout) is a colour terminal."""
    if not colour_enabled(stream or sys.stdout):
        return text
    return f"\x1b[{_CODES[style]}m{text}\x1b[0m"


_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def readable_duration(seconds: float) -> str:
    """``893`` → ``14m 53s``; the two largest units, so a glance is enough."""
    left = max(0, int(seconds))
    parts: list[str] = []
    for unit, size in _UNITS:
        amount, left = divmod(left, size)
        if amount or (parts and len(parts) < 2):
            parts.append(f"{amount}{unit}")
        if len(parts) == 2:
            break
    return " ".join(part for part in parts if not part.startswith("0")) or "0s"


def format_time(at: datetime) -> str:
    """``2026-11-21 09:00:03 UTC``: the store keeps UTC, and says so."""
    value = at if at.tzinfo else at.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
