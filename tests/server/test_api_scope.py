"""The agent API says with which scope an approval was given: ``once``, ``session``, ``always``.

The tool-call object (submit with wait, long-poll, list, batch) carries
``scope`` and so does the ``resolved`` event, so a client (the ACP proxy
choosing the agent's ``allow_always``) can tell an approval remembered for
the session from one for this call, on the very call the approver decided.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from tapgate.gate.models import GateEvent
from tapgate.server.api.events import event_out
from tests.factories import make_request
from tests.server.test_api import Api, api, config, open_stream, within

__all__ = ["api", "config"]  # the fixtures this module shares with test_api

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


async def decided(api: Api, scope: str, **fields: Any) -> dict[str, Any]:
    """A deploy approved with ``scope`` while a long-poll waits: the long-poll's answer."""
    status, body = await api.submit("deploy", arguments={"env": "prod"}, **fields)
    assert status == 201 and body["scope"] is None  # pending: nothing approved yet
    poll = asyncio.create_task(api.call("GET", f"/v1/tool-calls/{body['id']}?wait=30"))
    await api.parked(body["id"])
    await api.gate.resolve(body["id"], "approve", by="alice", scope=scope)  # type: ignore[arg-type]
    status, answer, _ = await within(poll)
    assert status == 200 and answer["decision"] == "allow"
    return answer


async def test_the_long_poll_says_an_approval_was_for_the_session(api: Api) -> None:
    answer = await decided(api, "session", session="chat-1")
    assert (answer["source"], answer["scope"]) == ("approver", "session")
    status, again, _ = await api.call("GET", f"/v1/tool-calls/{answer['id']}")
    assert status == 200 and again["scope"] == "session"
    status, listed, _ = await api.call("GET", "/v1/tool-calls")
    assert [c["scope"] for c in listed["tool_calls"] if c["id"] == answer["id"]] == ["session"]


async def test_an_approval_for_this_call_says_once(api: Api) -> None:
    answer = await decided(api, "once", session="chat-1")
    assert answer["scope"] == "once"


async def test_a_session_approval_of_a_call_without_a_session_says_once(api: Api) -> None:
    answer = await decided(api, "session")  # no session: no grant, it counts once
    assert answer["scope"] == "once"


async def test_an_always_approval_and_the_call_its_grant_answers_say_always(api: Api) -> None:
    answer = await decided(api, "always", session="chat-1")
    assert answer["scope"] == "always"
    status, again = await api.submit("deploy", arguments={"env": "prod"}, session="chat-2")
    assert status == 200 and again["id"] is None
    assert (again["source"], again["scope"]) == ("grant", "always")
    calls = [{"tool": "deploy", "arguments": {"env": "prod"}}]
    status, batch, _ = await api.call(
        "POST", "/v1/tool-call-batches", {"calls": calls, "session": "chat-3"}
    )
    assert status == 201, batch
    assert [(c["source"], c["scope"]) for c in batch["calls"]] == [("grant", "always")]


async def test_a_denial_and_a_policy_allow_have_no_scope(api: Api) -> None:
    request_id = await api.ask()
    await api.gate.resolve(request_id, "deny", by="bob", reason="not today")
    status, body, _ = await api.call("GET", f"/v1/tool-calls/{request_id}")
    assert status == 200 and body["decision"] == "deny" and body["scope"] is None
    status, body = await api.submit("read_file", arguments={"path": "README.md"})
    assert status == 200 and body["source"] == "policy" and body["scope"] is None


async def test_the_resolved_event_says_the_scope(api: Api) -> None:
    stream = await open_stream(api)
    status, body = await api.submit("deploy", arguments={"env": "x"}, session="chat-1")
    assert status == 201
    await api.gate.resolve(body["id"], "approve", by="alice", scope="always")
    resolved = (await stream.events(lambda e: e.kind == "resolved"))[-1]
    assert (resolved.outcome, resolved.scope) == ("approved_always", "always")
    await api.gate.resolve(await api.ask(), "deny", by="bob", reason="no")
    denied = (await stream.events(lambda e: e.kind == "resolved"))[-1]
    assert (denied.outcome, denied.scope) == ("denied", None)
    stream.resp.close()


def test_an_approval_no_grant_could_remember_is_told_as_once() -> None:
    """A handler's "always" on a call that may not be remembered made no grant."""
    request = make_request(
        NOW,
        status="approved",
        scope="always",
        grantable=False,
        session="chat-1",
        resolved_by="handler:auto",
        resolved_at=NOW,
    )
    told = event_out(GateEvent(kind="resolved", request=request, at=NOW))
    assert (told.outcome, told.scope) == ("approved", "once")
