"""Console delivery: approval requests as plain text on a terminal.

Owns the text form of a request for setups without a chat platform (a laptop,
a CI dry run): the same masked facts the chat messages show, then the exact
``tapgate resolve`` commands that decide it, so the approver can copy a line
instead of composing one. The commands carry ``--config`` with the file the
server was started with: pasted anywhere, they open this server's database.
All agent text comes through the presentation model, which masks secrets
and turns control characters (terminal escape sequences included) into
visible ``⟨U+001B⟩`` marks.

A question prints its text and the commands that answer it (``approve
--reason "<answer>"``) or dismiss it (``deny``); its outcome line reads
``💬 Answered by alice at 12:03 UTC: <answer>``.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from tapgate.decisions.remember import Offer
from tapgate.delivery.batch_view import BatchView, present_batch
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.presentation import (
    ApprovalView,
    clip,
    outcome_text,
    present,
    question_heading,
    truncate_lines,
)
from tapgate.gate.models import CONTACT_TOOL, Delivery, Request
from tapgate.policy.masking import clean

__all__ = ["ConsoleNotifier", "render_console", "render_console_batch"]

_BODY_MAX_CHARS = 8000
_BODY_MAX_LINES = 120
_REASON_MAX = 500
_INDENT = "    "


class ConsoleNotifier:
    """Writes each approval request, and each outcome, to a text stream.

    ``stream`` defaults to standard output at the time of writing (so that a
    redirected or captured ``sys.stdout`` is honoured). ``config_path``, when
    given, is added to every printed command as ``--config``.
    """

    channel = "console"
    edits_messages = True  # "updating" prints the outcome as a line of its own

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        tool_shell_args: Mapping[str, str] | None = None,
        config_path: str | None = None,
        offers: Callable[[Request], Offer] | None = None,
    ) -> None:
        self._stream = stream
        self._tool_shell_args = dict(tool_shell_args or {})
        self._config_path = config_path
        self._offers = offers

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Print ``request`` with the commands ``delivery.approver`` can run to decide it."""
        offer = self._offers(request) if self._offers is not None else None
        view = present(request, tool_shell_arg=self._tool_shell_args.get(request.tool), offer=offer)
        self._write(render_console(view, approver=delivery.approver, config_path=self._config_path))
        return Receipt(channel=self.channel, address=delivery.address, ref={})

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Print one line with the outcome; a pending request prints nothing."""
        status = request.status
        if status == "pending":
            return
        by = clean(request.resolved_by) if request.resolved_by else None
        question = request.tool == CONTACT_TOOL
        at = request.resolved_at or request.expires_at
        line = outcome_text(status, by=by, at=at, scope=request.scope, question=question)
        if request.resolution_reason:
            reason = clip(clean(request.resolution_reason), _REASON_MAX)
            line += f": {reason}" if question and status == "approved" else f" ({reason})"
        self._write(f"[tapgate] request {request.id}: {line}\n")

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Print a batch's calls as one block, each with the commands that decide it."""
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        self._write(render_console_batch(batch, approver=delivery.approver))
        return Receipt(channel=self.channel, address=delivery.address, ref={})

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Print one line with where the batch stands: ``2 approved, 1 denied, 1 pending``."""
        counts = Counter(r.status for r in requests)
        batch_id = requests[0].batch_id if requests else "?"
        told = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        self._write(f"[tapgate] batch {batch_id}: {told}\n")

    async def close(self) -> None:
        """Nothing to release; the stream belongs to the caller."""

    def announce(self, text: str) -> None:
        """Print an operator notice (not a request's message): e.g. a request nobody can see."""
        self._write(text)

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stdout
        stream.write(text)
        stream.flush()


def render_console(view: ApprovalView, *, approver: str, config_path: str | None = None) -> str:
    """The plain-text message: facts, arguments, then the resolve commands."""
    rid, who = shlex.quote(view.request_id), shlex.quote(approver)
    if config_path is not None:
        who += f" --config {shlex.quote(config_path)}"
    if view.is_question:
        return _render_question(view, rid, who)
    lines = [
        f"[tapgate] Approval needed: {view.tool} (request {view.request_id})",
        f"  agent:     {view.agent}" + (f"  session: {view.session}" if view.session else ""),
        f"  risk:      {view.risk}",
        f"  rule:      {view.rule}" + (f" ({view.reason})" if view.reason else ""),
        f"  expires:   {view.expires_text}" + (f" ({view.time_left})" if view.time_left else ""),
        f"  approvers: {', '.join(view.approvers) or '-'}",
        *([f"  status:    {view.note}"] if view.note else []),
        f"  {view.label}" + (f": {view.path}" if view.path else "") + ":",
        _indented(truncate_lines(view.body, _BODY_MAX_CHARS, _BODY_MAX_LINES)),
    ]
    if view.extra is not None:
        extra = truncate_lines(view.extra, _BODY_MAX_CHARS, _BODY_MAX_LINES)
        lines += ["  Other arguments:", _indented(extra)]
    lines += [
        f"  approve:   tapgate resolve {rid} approve --as {who}",
        f'  deny:      tapgate resolve {rid} deny --as {who} --reason "..."',
    ]
    if view.can_allow_session:
        lines.append(f"  session:   tapgate resolve {rid} approve --as {who} --scope session")
        if view.session_covers:
            lines.append(f"             ({view.session_covers})")
    if view.can_allow_always:
        lines.append(f"  always:    tapgate resolve {rid} approve --as {who} --scope always")
        if view.always_covers:
            lines.append(f"             ({view.always_covers})")
    return "\n".join(lines) + "\n"


def render_console_batch(batch: BatchView, *, approver: str) -> str:
    """A batch as one block: its facts, then each call as :func:`render_console` shows it.

    There is no "approve all" command: each call is its own request, decided
    by its own ``tapgate resolve`` line (the chat cards have the batch buttons).
    """
    lines = [
        f"[tapgate] Approval needed: {len(batch.calls)} calls (batch {batch.batch_id})",
        f"  agent:     {batch.agent}" + (f"  session: {batch.session}" if batch.session else ""),
        f"  expires:   {batch.expires_text}" + (f" ({batch.time_left})" if batch.time_left else ""),
    ]
    for number, call in enumerate(batch.calls, start=1):
        lines.append(f"  -- call {number} of {len(batch.calls)} --")
        if call.outcome is not None:
            lines.append(f"  {call.view.tool} (request {call.view.request_id}): {call.outcome}")
            continue
        single = render_console(call.view, approver=approver).removesuffix("\n").split("\n")
        lines += [f"  {line}" for line in single]
    return "\n".join(lines) + "\n"


def _render_question(view: ApprovalView, rid: str, who: str) -> str:
    """A question: who asks, its text, and the commands that answer or dismiss it."""
    lines = [
        f"[tapgate] Question: {question_heading(view)} (request {view.request_id})",
        f"  asked by:  {view.agent}" + (f"  session: {view.session}" if view.session else ""),
        f"  expires:   {view.expires_text}" + (f" ({view.time_left})" if view.time_left else ""),
        f"  approvers: {', '.join(view.approvers) or '-'}",
        "  Question:",
        _indented(truncate_lines(view.body, _BODY_MAX_CHARS, _BODY_MAX_LINES)),
    ]
    if view.extra is not None:
        extra = truncate_lines(view.extra, _BODY_MAX_CHARS, _BODY_MAX_LINES)
        lines += ["  Other arguments:", _indented(extra)]
    lines += [
        f'  answer:    tapgate resolve {rid} approve --as {who} --reason "..."',
        f"  dismiss:   tapgate resolve {rid} deny --as {who}",
    ]
    return "\n".join(lines) + "\n"


def _indented(text: str) -> str:
    return "\n".join(_INDENT + line for line in (text.removesuffix("\n") or "-").split("\n"))
