"""``tapgate inbox``: the pending requests of a running server, decided one key at a time.

For an operator at a desk: the list of pending requests, the selected one
drawn as the chat cards draw it (:mod:`tapgate.terminal.render`), and
the keys of the inline cards: Return approves, Escape denies, Alt/Option+
Return and Alt+Escape decide every open call of the selected request's batch,
``r`` denies with a typed reason, ``j`` / ``k`` or the arrows move, ``q``
leaves.

It reads the server's store directly, like ``tapgate pending``, and polls it
every second: decisions made elsewhere (a chat tap, another inbox) drop out
of the list within a second, without an event stream the operator would need
an agent token for. Unlike ``tapgate resolve`` it is not break-glass: every
decision goes through :meth:`Gate.resolve <tapgate.gate.gate.Gate.resolve>`
(or the batch compare-and-set) *with* the approver check, as the operator
named by ``--as``, so deciding a request one is not an approver of is
refused and audited like any chat tap (decision 0014-one-decision-path).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from tapgate.cli.commands import UsageError
from tapgate.cli.database import with_gate
from tapgate.config import Config
from tapgate.decisions.texts import NOT_APPROVER, NOT_FOUND, already_message, applied_message
from tapgate.delivery.presentation import clip, present
from tapgate.errors import (
    AlreadyResolved,
    ConfigError,
    NotAnApprover,
    RequestExpired,
    RequestNotFound,
)
from tapgate.gate.batching import resolve_batch
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Request
from tapgate.policy.masking import clean
from tapgate.terminal.keys import KeyReader, read_line
from tapgate.terminal.render import BOLD, DIM, REVERSE, paint, render_terminal

__all__ = ["KEYS_HELP", "inbox"]

KEYS_HELP = (
    "Return approve · Esc deny · Alt+Return approve batch · Alt+Esc deny batch · "
    "r deny with reason · j/k move · q quit"
)
"""The key line under the title: the inline cards' keys, so nobody has to guess."""

_ALT_SCREEN, _MAIN_SCREEN = "\x1b[?1049h\x1b[?25l", "\x1b[?25h\x1b[?1049l"
_HOME = "\x1b[H\x1b[2J"
Answer = Literal["approve", "deny"]


def inbox(args: argparse.Namespace, config: Config) -> int:
    """Run the inbox on this terminal as approver ``--as`` until ``q``."""
    if config.directory().get(args.as_) is None:
        raise ConfigError("approvers", f"no approver named {args.as_!r}")
    if not os.isatty(sys.stdin.fileno()):
        raise UsageError("tapgate inbox needs a terminal on standard input")
    with_gate(config, lambda gate: _Inbox(gate, args.as_, args.interval).run())
    return 0


@dataclass
class _Inbox:
    """The screen's state: the pending requests, the selection, the last outcome."""

    gate: Gate
    approver: str
    interval: float
    requests: list[Request] = field(default_factory=list)
    selected: str | None = None
    status: str = ""
    _drawn: str = ""

    async def run(self) -> None:
        self._write(_ALT_SCREEN)
        try:
            async with KeyReader(sys.stdin.fileno()) as keys:
                while True:
                    await self._refresh()
                    self._draw()
                    try:
                        key = await asyncio.wait_for(keys.next(), timeout=self.interval)
                    except TimeoutError:
                        continue  # poll: another surface may have decided something
                    if key in ("q", "ctrl+c", "ctrl+d", "eof"):
                        return
                    await self._on_key(key, keys)
        finally:
            self._write(_MAIN_SCREEN)

    async def _refresh(self) -> None:
        found = await self.gate.list_requests(status="pending", limit=500)
        now = self.gate.clock.now()
        self.requests = sorted((r for r in found if r.expires_at > now), key=_by_deadline)
        ids = [r.id for r in self.requests]
        if self.selected not in ids:
            self.selected = ids[0] if ids else None

    async def _on_key(self, key: str, keys: KeyReader) -> None:
        current = self._current()
        if key in ("j", "down", "k", "up"):
            self._move(1 if key in ("j", "down") else -1)
        elif current is None:
            return
        elif key == "enter" and current.tool == CONTACT_TOOL:
            answer = await self._ask("answer: ", keys)
            if answer:
                await self._decide(current, "approve", reason=answer)
        elif key in ("enter", "escape"):
            await self._decide(current, "approve" if key == "enter" else "deny")
        elif key == "r":
            reason = await self._ask("deny, reason (Return to send, Esc to cancel): ", keys)
            if reason is not None:
                await self._decide(current, "deny", reason=reason.strip() or None)
        elif key in ("alt+enter", "alt+escape"):
            verdict: Answer = "approve" if key == "alt+enter" else "deny"
            await self._decide_batch(current, verdict)

    async def _decide(self, request: Request, verdict: Answer, reason: str | None = None) -> None:
        try:
            decided = await self.gate.resolve(
                request.id, verdict, by=self.approver, reason=reason, detail={"via": "inbox"}
            )
        except NotAnApprover:
            self.status = NOT_APPROVER
        except RequestNotFound:
            self.status = NOT_FOUND
        except (AlreadyResolved, RequestExpired) as late:
            seen = late.request if isinstance(late.request, Request) else request
            status = "expired" if isinstance(late, RequestExpired) else seen.status
            self.status = already_message(seen, status)
        else:
            self.status = applied_message(decided)

    async def _decide_batch(self, request: Request, verdict: Answer) -> None:
        """Every open call of the batch in one transaction, each checked against its approvers."""
        if request.batch_id is None:
            await self._decide(request, verdict)
            return
        transitions = await resolve_batch(
            self.gate, request.batch_id, verdict, by=self.approver, detail={"via": "inbox"}
        )
        applied = sum(t.outcome == "applied" for t in transitions)
        refused = sum(t.outcome == "unauthorized" for t in transitions)
        past = "approved" if verdict == "approve" else "denied"
        self.status = f"Batch {request.batch_id[:8]}: {applied} {past}"
        if refused:
            self.status += f", {refused} refused (not an approver)"

    async def _ask(self, prompt: str, keys: KeyReader) -> str | None:
        self._write(f"\x1b[{_size()[1]};1H\x1b[2K{prompt}\x1b[?25h")
        try:
            return await read_line(keys, self._write)
        finally:
            self._write("\x1b[?25l")
            self._drawn = ""  # the prompt overwrote the screen's last line

    def _current(self) -> Request | None:
        return next((r for r in self.requests if r.id == self.selected), None)

    def _move(self, step: int) -> None:
        ids = [r.id for r in self.requests]
        if ids and self.selected in ids:
            index = min(max(ids.index(self.selected) + step, 0), len(ids) - 1)
            self.selected = ids[index]

    def _draw(self) -> None:
        screen = self._screen(*_size())
        if screen != self._drawn:  # unchanged: no flicker, and no bytes for nobody
            self._write(_HOME + screen)
            self._drawn = screen

    def _screen(self, width: int, height: int) -> str:
        now = self.gate.clock.now()
        count = f"{len(self.requests)} pending"
        lines = [
            paint(f"tapgate inbox · {self.approver} · {count}", BOLD),
            paint(clip(KEYS_HELP, width), DIM),
            "",
        ]
        shown = self.requests[: max(height // 3, 3)]
        for request in shown:
            row = clip(_row(request, now), width - 2)
            lines.append(paint("> " + row, REVERSE) if request.id == self.selected else "  " + row)
        if len(self.requests) > len(shown):
            lines.append(f"  … {len(self.requests) - len(shown)} more")
        if not self.requests:
            lines.append("  no pending requests")
        current = self._current()
        if current is not None:
            room = max(height - len(lines) - 3, 4)
            lines += ["", *render_terminal(present(current, now=now), max_lines=room).splitlines()]
        lines = [*lines[: height - 2], "", clip(self.status, width)]
        return "\n".join(lines)

    def _write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()


def _row(request: Request, now: datetime) -> str:
    """One line of the list; agent text cleaned (no escape sequence reaches the terminal)."""
    left = max(int((request.expires_at - now).total_seconds()), 0)
    who = clean(request.agent) + (f"/{clean(request.session)}" if request.session else "")
    batch = f"  batch {request.batch_id[:8]}" if request.batch_id else ""
    return f"{clean(request.tool)}  {who}  expires in {left}s  {request.id[:8]}{batch}"


def _by_deadline(request: Request) -> tuple[datetime, str]:
    return request.expires_at, request.id


def _size() -> tuple[int, int]:
    size = shutil.get_terminal_size((100, 30))
    return size.columns, size.lines
