"""Keypresses from a terminal, one at a time, without blocking the event loop.

The terminal prompt and ``tapgate inbox`` answer single keys (Return
approves, Escape denies, as on the chat cards), so the terminal is put in
a character-at-a-time mode with no echo and no signals (Ctrl+C arrives as a
key and is handled like ``q``, so the screen is always restored), and read
with ``loop.add_reader``: a prompt taken down because a chat tap came first
is a cancelled ``await``, not a thread stuck in ``read``. Only the stdlib
(``termios``), no curses.

Escape starts both the Escape key and every multi-byte key (arrows, Alt+…),
so a lone ``ESC`` is held for :data:`ESCAPE_WAIT` seconds: a terminal sends
the rest of a sequence at once, a person's next key comes much later.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import termios
from collections.abc import Callable
from functools import partial
from types import TracebackType
from typing import Any

__all__ = ["ESCAPE_WAIT", "KeyReader", "decode_keys", "read_line"]

ESCAPE_WAIT = 0.05

_CSI_ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left"}
_SINGLE = {"\r": "enter", "\n": "enter", "\x7f": "backspace", "\x08": "backspace", "\x03": "ctrl+c"}
_SINGLE |= {"\x04": "ctrl+d", "\t": "tab"}


def decode_keys(text: str, *, final: bool = False) -> tuple[list[str], str]:
    """The keys in ``text`` and the unfinished rest (an escape sequence cut short).

    Names: ``enter``, ``escape``, ``alt+enter``, ``alt+escape``, ``up`` /
    ``down`` / ``left`` / ``right``, ``backspace``, ``ctrl+c``, ``alt+x``,
    or the character itself. With ``final`` a lone ``ESC`` is the Escape key.
    """
    keys: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\x1b":
            keys.append(_SINGLE.get(char, char))
            i += 1
            continue
        if i + 1 == len(text):
            if not final:
                break
            keys.append("escape")
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in "[O":  # CSI / SS3: arrows; others are read to their end and dropped
            end = i + 2
            while end < len(text) and not ("@" <= text[end] <= "~"):
                end += 1
            if end == len(text):
                if not final:
                    break
                i = end
                continue
            arrow = _CSI_ARROWS.get(text[end]) if end == i + 2 else None
            if arrow is not None:
                keys.append(arrow)
            i = end + 1
            continue
        keys.append("alt+" + {"\r": "enter", "\n": "enter", "\x1b": "escape"}.get(nxt, nxt))
        i += 2
    return keys, text[i:]


class KeyReader:
    """Keys from the terminal at ``fd`` while the ``async with`` block runs.

    Entering switches the terminal to keys-at-once, no echo, no signals;
    leaving restores it exactly as it was, however the block ends.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._saved: list[Any] | None = None
        self._keys: asyncio.Queue[str] = asyncio.Queue()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._rest = ""
        self._flush: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> KeyReader:
        self._saved = termios.tcgetattr(self._fd)
        mode = termios.tcgetattr(self._fd)
        mode[0] &= ~(termios.ICRNL | termios.IXON)  # iflag: Return stays \r, Ctrl+S is a key
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)  # lflag
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self._fd, termios.TCSANOW, mode)
        asyncio.get_running_loop().add_reader(self._fd, self._readable)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        asyncio.get_running_loop().remove_reader(self._fd)
        if self._flush is not None:
            self._flush.cancel()
        if self._saved is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)

    async def next(self) -> str:
        """The next key; ``eof`` when the terminal is gone."""
        return await self._keys.get()

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, 1024)
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._keys.put_nowait("eof")
            return
        self._take(self._decoder.decode(data))

    def _take(self, text: str, *, final: bool = False) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        keys, self._rest = decode_keys(self._rest + text, final=final)
        for key in keys:
            self._keys.put_nowait(key)
        if self._rest:
            loop = asyncio.get_running_loop()
            self._flush = loop.call_later(ESCAPE_WAIT, partial(self._take, "", final=True))


async def read_line(keys: KeyReader, echo: Callable[[str], None]) -> str | None:
    """A line typed at the terminal: Return ends it, Escape (or Ctrl+C) abandons it (``None``).

    ``echo`` shows what changes (a character, or ``"\\b \\b"`` to erase one).
    """
    typed: list[str] = []
    while True:
        key = await keys.next()
        if key == "enter":
            return "".join(typed)
        if key in ("escape", "ctrl+c", "eof"):
            return None
        if key == "backspace":
            if typed:
                typed.pop()
                echo("\b \b")
        elif len(key) == 1 and key.isprintable():
            typed.append(key)
            echo(key)
