"""Build tapgate's wheel from this checkout, one build at a time across test processes.

``pip wheel`` of a source tree builds in the tree (setuptools writes
``build/`` and ``src/tapgate.egg-info`` there), so two pytest-xdist workers
building at once (the container image's wheelhouse, the packaging test) can
collide: seen as "Failed to build one or more wheels" when both ran together.
An exclusive lock on a file beside the checkout's ``build/`` folder makes
the second wait for the first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.locks import exclusive

__all__ = ["ROOT", "build_wheel"]

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(wheelhouse: Path, *flags: str, timeout: float = 900) -> None:
    """``pip wheel`` this checkout into ``wheelhouse`` (with ``flags``), holding the build lock."""
    with exclusive(ROOT / "build" / ".tests-wheel.lock"):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", *flags, "-w", str(wheelhouse), str(ROOT)],
            check=True,
            capture_output=True,
            timeout=timeout,
        )
