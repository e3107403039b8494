"""The client reads an approval's ``scope`` as the server sends it, and a server that sends none.

Against the real server: a session approval, and the call its grant then
answers, reach the agent as ``Decision.scope``. On the wire alone: an older
server's answer (no ``scope``) and a value this client does not know read as
``None``, never as a reason to fail the call or to take it for more.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tapgate.client import RemoteGate
from tapgate.client._wire import decision_from, ticket_from
from tapgate.gate.models import ToolCall
from tapgate.server.keys import GATE
from tests.client.test_client import Served, served
from tests.server.test_api import CI

__all__ = ["served"]  # the fixture this module shares with test_client

DEPLOY = ToolCall(tool="deploy", arguments={"env": "prod"}, session="chat-1")


async def test_a_session_approval_and_its_grants_answer_carry_the_scope(served: Served) -> None:
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:
        ticket = await gate.submit(DEPLOY)
        assert ticket.decision is None and ticket.request is not None
        waiting = asyncio.create_task(gate.wait(ticket.request.id))
        await served.app[GATE].resolve(ticket.request.id, "approve", by="alice", scope="session")
        approved = await asyncio.wait_for(waiting, 10)
        assert approved is not None
        assert (approved.source, approved.scope) == ("approver", "session")
        again = await gate.submit(DEPLOY)  # the grant answers at once
        assert again.decision is not None
        assert (again.decision.source, again.decision.scope) == ("grant", "session")


def state(**fields: Any) -> dict[str, Any]:
    return {
        "id": "r1",
        "decision": "allow",
        "status": "approved",
        "source": "approver",
        "decided_by": "alice",
        "reason": "approved by alice",
        "rule": "policy.rules[0]",
    } | fields


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        ({"scope": "always"}, "always"),
        ({"scope": "once"}, "once"),
        ({}, None),  # a server from before the field
        ({"scope": None}, None),
        ({"scope": "turn"}, None),  # a newer server's value: not taken for more
        ({"scope": {"session": True}}, None),  # not even text
        ({"scope": ["always"]}, None),
    ],
)
def test_the_scope_on_the_wire_is_read_or_left_out(sent: dict[str, Any], read: Any) -> None:
    decision = decision_from(state(**sent))
    assert decision is not None and decision.scope == read
    ticket = ticket_from(state(**sent), DEPLOY)
    assert ticket.decision is not None and ticket.decision.scope == read
