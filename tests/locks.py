"""An exclusive lock on a file, for the few things test processes must do one at a time.

pytest-xdist's workers are separate processes: a ``threading`` lock means
nothing between them, an ``fcntl`` lock on a shared file does. The lock is
released when the file is closed, also when its holder dies, so a crashed
worker cannot leave the others waiting.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

__all__ = ["exclusive"]


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield
