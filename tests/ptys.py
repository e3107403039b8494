"""A real pseudo-terminal around a child process: type keys, read the screen.

The terminal prompt and ``tapgate inbox`` switch their terminal's mode and
read single keys, which only a real terminal exercises: the child gets the
pty's slave side as stdin, stdout and stderr (and its window size), the
test holds the master side.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

__all__ = ["ROOT", "Terminal", "Terminals", "plain"]

ROOT = Path(__file__).parent.parent
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """``text`` without its colour and cursor sequences."""
    return _ANSI.sub("", text)


class Terminal:
    """A child process on a fresh pty of ``columns`` × ``rows``."""

    def __init__(self, argv: Sequence[str], *, columns: int = 120, rows: int = 50) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.process = subprocess.Popen(
            [sys.executable, *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self._master = master
        self.raw = ""
        self._mark = 0

    def send(self, keys: str) -> None:
        """Type ``keys``; later reads look only at what the screen showed after them."""
        self._mark = len(self.raw)
        os.write(self._master, keys.encode())

    def expect(self, text: str, timeout: float = 20.0) -> str:
        """Read until ``text`` shows (colours ignored) since the last :meth:`send`; the screen."""
        deadline = time.monotonic() + timeout
        while text not in plain(self.raw[self._mark :]):
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{text!r} never showed; the screen:\n{plain(self.raw)}")
        return self.raw[self._mark :]

    def wait(self, timeout: float = 20.0) -> int:
        """The child's exit status, reading its last output meanwhile."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.1):
            pass
        return self.process.wait(timeout=1)

    def close(self) -> None:
        """Stop the child if it still runs; release the pty."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._master)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self._master, 65536)
        except OSError:  # EIO: the child closed its side
            return False
        self.raw += data.decode(errors="replace")
        return bool(data)


class Terminals:
    """The terminals a test started, each closed (its child stopped) when the block ends."""

    def __init__(self) -> None:
        self.started: list[Terminal] = []

    def start(self, argv: Sequence[str]) -> Terminal:
        """A new :class:`Terminal` running ``argv``, closed with the others."""
        terminal = Terminal(argv)
        self.started.append(terminal)
        return terminal

    def __enter__(self) -> Terminals:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for terminal in self.started:
            terminal.close()
