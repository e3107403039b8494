"""The MCP gateway's decision half: one ``tools/call`` asked of tapgate, free of the MCP SDK.

:mod:`tapgate.client._mcp_proxy` speaks MCP; this module decides. Kept apart
so the rules that matter for safety (the tool's name as the policy sees it,
which annotations may become a risk, what the model is told when a call does
not run) read without the SDK's types around them.

Every outcome other than "allowed" is text for the model, never an exception:
an MCP client hands a tool result with ``isError`` back to the model, which can
read why and change course, whereas a protocol error looks like a broken
server. Nothing here ever lets a call through that tapgate did not allow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping
from typing import Any

import anyio

from tapgate.client._ask import describe, failure
from tapgate.client._remote import RemoteGate
from tapgate.gate.models import Decision, Risk, ToolCall

__all__ = ["WITHDRAW_GRACE", "annotation_risk", "decided", "gated_name", "refusal", "unlisted"]

WITHDRAW_GRACE = 5.0
"""Seconds a cancelled call may spend withdrawing its request before the proxy gives up on it."""


def gated_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``: the name Claude Code gives the same tool, so one policy covers both.

    A policy written for Claude Code's own MCP servers (``mcp__github__*``)
    therefore keeps working when the server is moved behind the gateway.
    """
    return f"mcp__{server}__{tool}"


def annotation_risk(*, read_only: bool | None, destructive: bool | None) -> Risk | None:
    """The risk a *trusted* server's tool annotations declare, or ``None`` to leave it to config.

    Only explicit hints count: ``readOnlyHint: true`` is ``read_only`` and
    ``destructiveHint: true`` is ``destructive``. The spec's default for an
    absent ``destructiveHint`` (true) is not applied, because most servers
    annotate nothing and would all become ``destructive`` (denied by default);
    an unannotated tool keeps tapgate's own default (``write``: ask).
    """
    if read_only:
        return "read_only"
    if destructive:
        return "destructive"
    return None


_LISTED_NAMES = 30
"""How many of the upstream's tool names a refusal lists: enough to spot a misspelling."""


def unlisted(server: str, tool: str, listed: Collection[str]) -> str:
    """What the model is told for a tool the upstream does not list: nobody was asked.

    Paging an approver for a call that cannot run would cost them a decision
    and the model the whole timeout; the names that exist let it correct itself.
    """
    names = sorted(listed)
    shown = ", ".join(names[:_LISTED_NAMES])
    more = f" and {len(names) - _LISTED_NAMES} more" if len(names) > _LISTED_NAMES else ""
    tools = f"its tools: {shown}{more}" if names else "it lists no tools"
    return (
        f"tapgate: the MCP server {server!r} has no tool {tool!r} ({tools}); "
        "the tool was not called and nobody was asked"
    )


async def refusal(gate: RemoteGate, call: ToolCall) -> str | Mapping[str, Any]:
    """The arguments to run ``call`` with when tapgate allows it; else why not, for the model.

    The arguments are ``call``'s own, or the ones an approver edited before
    approving (MCP's ``tools/call`` carries any arguments, so an edit always
    applies). Waits as long as the request lives on the server. A wait the
    MCP client cancels (it gave up on the tool call) withdraws the request,
    so no approver is left deciding a call nobody will run.
    """
    try:
        decision = await decided(gate, call)
    except Exception as exc:  # the model must get an answer, whatever failed
        return f"tapgate: {failure(gate.base_url, exc)}; the tool was not called"
    if decision.allowed:
        return decision.arguments if decision.edited and decision.arguments else call.arguments
    if decision.status == "expired":
        return f"tapgate: request {decision.request_id} expired: {decision.reason}"
    return f"tapgate: {describe(decision)}"


async def decided(
    gate: RemoteGate,
    call: ToolCall,
    *,
    withdrawn: str = "the MCP client stopped waiting; withdrawn",
) -> Decision:
    """Submit, then wait; a wait given up withdraws the request (saying ``withdrawn``).

    The submit is shielded from the MCP client's cancel: cut short after the
    server made the request, it would leave a pending request whose id the
    proxy never learnt, for an approver to decide a call nobody will run.
    A cancel that came meanwhile is raised by the wait, which withdraws it.
    """
    with anyio.CancelScope(shield=True):
        ticket = await gate.submit(call)
    if ticket.decision is not None:
        return ticket.decision
    request = ticket.request
    assert request is not None  # a ticket without a decision carries its request
    try:
        result = await gate.wait(request.id)
    except BaseException:  # cancelled or failed: nobody waits for this request any more
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(WITHDRAW_GRACE),
            contextlib.suppress(Exception),  # best effort: it expires on the server anyway
        ):
            await gate.cancel(request.id, reason=withdrawn)
        raise
    assert result is not None  # no timeout: the wait ends with a decision
    return result
