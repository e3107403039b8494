"""The terminal prompt: a developer at the keyboard answers the in-process gate's asks.

A :class:`~tapgate.gate.handlers.Handler` for ``Gate(handler=TerminalPrompt())``:
it draws the request as the chat cards show it (:mod:`tapgate.terminal.render`:
the command, the edit as a coloured diff, JSON) and waits for one key:

- Return or ``y``: approve this call;
- ``s``: allow for this session (when the request can be granted for one);
- ``a``: always allow this call's fingerprint (a durable grant);
- Escape or ``n``: deny, then type the reason the agent's model will read
  (Return with nothing typed uses a default; Escape goes back to the choice).

The gate records the answer through its one decision path as
``handler:terminal``. Without a terminal on ``input`` (CI, a daemon) the
prompt passes, leaving the ask to the chat, rather than waiting on keys that
will never come. Two asks at once are prompted one after the other.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from datetime import UTC, datetime
from typing import TextIO

from tapgate.delivery.presentation import present
from tapgate.gate.handlers import HandlerAnswer, approve, deny
from tapgate.gate.models import Request
from tapgate.terminal.keys import KeyReader, read_line
from tapgate.terminal.render import BOLD, DIM, paint, render_terminal

__all__ = ["DEFAULT_DENY_REASON", "TerminalPrompt"]

log = logging.getLogger(__name__)

DEFAULT_DENY_REASON = "denied at the terminal"


class TerminalPrompt:
    """Asks at a terminal: ``input`` (a file descriptor or stream, default stdin), ``output``.

    ``colour`` defaults to on unless ``NO_COLOR`` is set (https://no-color.org).
    """

    name = "terminal"

    def __init__(
        self,
        *,
        input: int | TextIO | None = None,
        output: TextIO | None = None,
        colour: bool | None = None,
        tool_shell_args: dict[str, str] | None = None,
    ) -> None:
        self._input = input
        self._output = output
        self._colour = colour if colour is not None else "NO_COLOR" not in os.environ
        self._tool_shell_args = dict(tool_shell_args or {})
        self._lock = asyncio.Lock()

    async def answer(self, request: Request) -> HandlerAnswer | None:
        """Show ``request`` and return the key's answer; ``None`` without a terminal."""
        fd = self._fd()
        if not os.isatty(fd):
            log.warning(
                "no terminal on the prompt's input; request %s waits for the chat", request.id
            )
            return None
        async with self._lock:
            view = present(
                request,
                tool_shell_arg=self._tool_shell_args.get(request.tool),
                now=datetime.now(UTC),
            )
            self._write("\n" + render_terminal(view, colour=self._colour))
            choices = ["Return/y approve"]
            if view.can_allow_session:
                choices.append("s session")
            if request.grantable:
                choices.append("a always")
            choices.append("Esc/n deny")
            try:
                async with KeyReader(fd) as keys:
                    return await self._choose(
                        keys, request, " · ".join(choices), view.can_allow_session
                    )
            except asyncio.CancelledError:
                self._write(paint("\n[tapgate] decided elsewhere\n", DIM, colour=self._colour))
                raise

    async def _choose(
        self, keys: KeyReader, request: Request, choices: str, session: bool
    ) -> HandlerAnswer | None:
        while True:
            self._write(paint(f"[tapgate] {choices}: ", BOLD, colour=self._colour))
            key = await keys.next()
            if key in ("enter", "y"):
                self._write("approved\n")
                return approve(reason="approved at the terminal")
            if key == "s" and session:
                self._write("approved for this session\n")
                return approve(scope="session", reason="approved at the terminal for this session")
            if key == "a" and request.grantable:
                self._write("always approved\n")
                return approve(scope="always", reason="always approved at the terminal")
            if key in ("escape", "n"):
                self._write("deny, reason (Return to send, Esc to go back): ")
                reason = await read_line(keys, self._write)
                if reason is not None:
                    self._write("\n")
                    return deny(reason.strip() or DEFAULT_DENY_REASON)
                self._write("\n")
            elif key == "eof":
                return None  # the terminal is gone: leave the ask to the chat
            else:
                self._write("\n")

    def _fd(self) -> int:
        source = self._input if self._input is not None else sys.stdin
        return source if isinstance(source, int) else source.fileno()

    def _write(self, text: str) -> None:
        stream = self._output or sys.stdout
        stream.write(text)
        stream.flush()
