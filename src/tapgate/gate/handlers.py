"""Local answers to an "ask" for the in-process gate: handlers and modes.

A library user often has no chat at hand: tests want every ask approved, a
read-only run wants every ask refused, a developer at a laptop wants a
terminal prompt. This module is that seam, kept out of the gate so the gate
still reads as the story of a call.

- A **mode** (``Gate(mode=...)``) changes only what "ask" does: ``normal``
  waits for a human, ``approve_all`` approves at once, ``strict`` denies at
  once. Policy's allow and deny are never touched: a mode is consulted only
  after policy (and grants) sent the call to a human.
- A **handler** (``Gate(handler=...)``) is asked *before* the chat and raced
  against it: whichever answers first decides, and the other is cancelled
  (a prompt on screen is taken down). A handler may also pass (``None``),
  leaving the request to the chat. Any sync or async callable is a handler;
  :func:`auto_approve`, :func:`auto_deny` and
  :class:`~tapgate.channels.console.prompt.TerminalPrompt` ship.

Neither skips the record: the request is created and audited as any ask,
then decided through :meth:`Gate.resolve <tapgate.gate.gate.Gate.resolve>`,
the one compare-and-set every surface uses, so a chat tap racing the handler
is refused as "already decided" and the audit names who decided:
``handler:terminal`` or ``mode:strict``. Both act outside the request's
approver list, so they are recorded the way an operator's ``tapgate
resolve`` is (``break_glass``), and a review of decisions that bypassed the
approvers finds them too.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

from tapgate.errors import AlreadyResolved, RequestExpired
from tapgate.gate.models import Decision, Request, Scope

if TYPE_CHECKING:
    from tapgate.gate.gate import Gate

__all__ = [
    "MODES",
    "Handler",
    "HandlerAnswer",
    "HandlerFunction",
    "Mode",
    "answer_ask",
    "approve",
    "as_handler",
    "auto_approve",
    "auto_deny",
    "deny",
]

log = logging.getLogger(__name__)

Mode = Literal["normal", "approve_all", "strict"]
"""What an "ask" does: wait for a human, approve at once, or deny at once."""

MODES: tuple[Mode, ...] = ("normal", "approve_all", "strict")


@dataclass(frozen=True, kw_only=True, slots=True)
class HandlerAnswer:
    """A handler's decision on one request: recorded as if an approver had tapped it."""

    verdict: Literal["approve", "deny"]
    reason: str | None = None
    scope: Scope = "once"
    kind: Literal["handler_answer"] = "handler_answer"


def approve(*, scope: Scope = "once", reason: str | None = None) -> HandlerAnswer:
    """Approve the request; ``session`` / ``always`` also grant its fingerprint."""
    return HandlerAnswer(verdict="approve", scope=scope, reason=reason)


def deny(reason: str) -> HandlerAnswer:
    """Deny the request; ``reason`` reaches the agent (and its model) as the decision's reason."""
    return HandlerAnswer(verdict="deny", reason=reason)


_Result: TypeAlias = HandlerAnswer | bool | None

HandlerFunction: TypeAlias = Callable[[Request], _Result | Awaitable[_Result]]
"""A plain function as a handler: ``True`` approves, ``False`` denies, ``None`` passes."""


@runtime_checkable
class Handler(Protocol):
    """Answers a request before the chat does, or passes it on (``None``).

    ``name`` is what the audit records (``handler:<name>``).
    """

    @property
    def name(self) -> str:
        """The handler's name in the audit."""
        ...

    async def answer(self, request: Request) -> HandlerAnswer | None:
        """Decide ``request``, or ``None`` to leave it to the chat."""
        ...


@dataclass(frozen=True, slots=True)
class _Fixed:
    """A handler that always gives the same answer (tests, read-only runs)."""

    name: str
    reply: HandlerAnswer

    async def answer(self, request: Request) -> HandlerAnswer | None:
        return self.reply


def auto_approve(*, scope: Scope = "once") -> Handler:
    """Approve every ask at once (a test suite, a sandbox); audited as ``handler:auto_approve``."""
    reason = "approved by the auto_approve handler"
    return _Fixed("auto_approve", approve(scope=scope, reason=reason))


def auto_deny(reason: str = "denied by the auto_deny handler") -> Handler:
    """Deny every ask at once with ``reason`` (a read-only run); ``handler:auto_deny``."""
    return _Fixed("auto_deny", deny(reason))


@dataclass(frozen=True, slots=True)
class _Function:
    """A sync or async callable as a :class:`Handler`."""

    name: str
    function: HandlerFunction

    async def answer(self, request: Request) -> HandlerAnswer | None:
        result = self.function(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, bool):  # bool first: a verdict, not "no answer"
            verb = "approved" if result else "denied"
            reply = f"{verb} by the {self.name} handler"
            return approve(reason=reply) if result else deny(reply)
        return result


def as_handler(handler: Handler | HandlerFunction, *, name: str | None = None) -> Handler:
    """``handler`` as a :class:`Handler`: a callable is named after itself unless ``name`` says."""
    if isinstance(handler, Handler):
        return handler
    return _Function(name or str(getattr(handler, "__name__", "callable")), handler)


async def answer_ask(gate: Gate, request: Request, *, reused: bool = False) -> Decision:
    """The decision for a pending ``request``: by the gate's mode, its handler, or a human.

    A ``reused`` request (an identical call already asking) already has its
    handler at work, so only the mode acts on it; the rest wait as usual.
    """
    if gate.mode != "normal":
        await _decide_by_mode(gate, request)
    elif gate.handler is not None and not reused:
        return await _race(gate, gate.handler, request)
    decision = await gate.wait(request.id)
    assert decision is not None  # with no timeout, wait returns at the deadline at the latest
    return decision


async def _decide_by_mode(gate: Gate, request: Request) -> None:
    mode = gate.mode
    verdict: Literal["approve", "deny"] = "approve" if mode == "approve_all" else "deny"
    reason = "approved: the gate runs in approve_all mode"
    if verdict == "deny":
        reason = "denied: the gate runs in strict mode, where every ask is refused"
    await _record(gate, request, verdict, by=f"mode:{mode}", reason=reason, detail={"mode": mode})


async def _race(gate: Gate, handler: Handler, request: Request) -> Decision:
    """The handler and the chat, whichever decides first; the loser is cancelled."""
    waiting = asyncio.ensure_future(gate.wait(request.id))
    answering = asyncio.ensure_future(_ask(gate, handler, request))
    try:
        await asyncio.wait({waiting, answering}, return_when=asyncio.FIRST_COMPLETED)
        decision = await waiting  # a handler's answer wakes it; a pass leaves it to the chat
    finally:
        for task in (answering, waiting):
            task.cancel()
        # A prompt taken down restores the terminal before the agent goes on.
        failed = (await asyncio.gather(answering, waiting, return_exceptions=True))[0]
        if isinstance(failed, Exception) and not isinstance(failed, asyncio.CancelledError):
            log.error("recording handler %s's answer failed: %r", handler.name, failed)
    assert decision is not None
    return decision


async def _ask(gate: Gate, handler: Handler, request: Request) -> None:
    try:
        answer = await handler.answer(request)
    except Exception:
        # Fail closed: a broken handler must not leave an agent waiting on a
        # chat nobody reads, nor let the call through.
        log.exception("handler %s failed on request %s; denying", handler.name, request.id)
        answer = deny(f"the {handler.name} handler failed; denied")
    if answer is None:
        return
    await _record(
        gate,
        request,
        answer.verdict,
        by=f"handler:{handler.name}",
        reason=answer.reason,
        scope=answer.scope,
        detail={"handler": handler.name},
    )


async def _record(
    gate: Gate,
    request: Request,
    verdict: Literal["approve", "deny"],
    *,
    by: str,
    reason: str | None,
    detail: dict[str, str],
    scope: Scope = "once",
) -> None:
    # A human (or the deadline) may have been first: exactly once, and theirs stands.
    with contextlib.suppress(AlreadyResolved, RequestExpired):
        await gate.resolve(
            request.id, verdict, by=by, scope=scope, reason=reason, authorize=False, detail=detail
        )
