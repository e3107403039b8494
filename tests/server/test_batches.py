"""Batches, approvals consumed once, decided-since and events that carry the call.

Through the real app (``build_app``) over loopback, as ``test_api`` does;
approvers decide through the gate (the chat cards and their taps are tested
with the fake platforms in ``tests/webhooks``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tapgate.gate.batching import MAX_CALLS
from tapgate.gate.models import ToolCall
from tapgate.server.api.events import EventOut
from tests.server.test_api import OTHER, Api, api, config, open_stream, within

__all__ = ["api", "config"]  # the fixtures this module shares with test_api


def calls(*tools: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"tool": tool, "arguments": {"n": i, **arguments}} for i, tool in enumerate(tools)]


async def submit_batch(api: Api, batch: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    status, body, resp = await api.call("POST", "/v1/tool-call-batches", {"calls": batch, **fields})
    assert status == 201, body
    assert resp.headers["Location"] == f"/v1/tool-call-batches/{body['id']}"
    return body


# -- batches ---------------------------------------------------------------------------


async def test_a_batch_decides_what_it_can_and_asks_the_rest_as_one_batch(api: Api) -> None:
    body = await submit_batch(api, calls("read_file", "drop_db", "deploy", "deploy"))
    allowed, denied, first, second = body["calls"]
    assert (allowed["decision"], allowed["id"]) == ("allow", None)
    assert (denied["decision"], denied["id"]) == ("deny", None)
    assert first["decision"] == second["decision"] == "pending"
    assert first["id"] != second["id"]  # each call is its own request
    assert first["batch_id"] == second["batch_id"] == body["id"]
    assert body["status"] == "pending"
    # Each ask is visible on its own, bound to its own arguments.
    for call, n in ((first, 2), (second, 3)):
        request = await api.gate.get_request(call["id"])
        assert request.arguments == {"n": n} and request.batch_id == body["id"]


async def test_the_batch_long_poll_returns_every_decision(api: Api) -> None:
    body = await submit_batch(api, calls("read_file", "drop_db", "deploy", "deploy"))
    asks = [c["id"] for c in body["calls"] if c["id"]]
    poll = asyncio.create_task(api.call("GET", f"/v1/tool-call-batches/{body['id']}?wait=30"))
    for request_id in asks:
        await api.parked(request_id)
    await api.gate.resolve(asks[0], "approve", by="alice")
    assert not poll.done()  # one call still waits
    await api.gate.resolve(asks[1], "deny", by="bob", reason="not today")
    status, polled, _ = await within(poll)
    assert status == 200 and polled["status"] == "decided"
    assert [c["decision"] for c in polled["calls"]] == ["allow", "deny", "allow", "deny"]
    assert polled["calls"][3]["reason"] == "not today"


async def test_a_submit_with_wait_holds_until_the_batch_is_decided(api: Api) -> None:
    async def approve_when_parked() -> None:
        for _ in range(5000):
            pending = await api.gate.list_requests(status="pending")
            if pending and api.gate.waiting_on(pending[0].id):
                await api.gate.resolve(pending[0].id, "approve", by="alice")
                return
            await asyncio.sleep(0.001)

    approving = asyncio.create_task(approve_when_parked())
    body = await within(submit_batch(api, calls("read_file", "deploy"), wait=30))
    await approving
    assert body["status"] == "decided"
    assert [c["decision"] for c in body["calls"]] == ["allow", "allow"]


async def test_cancelling_a_batch_withdraws_only_what_is_still_pending(api: Api) -> None:
    body = await submit_batch(api, calls("deploy", "deploy", "read_file"))
    first, second = body["calls"][0]["id"], body["calls"][1]["id"]
    await api.gate.resolve(first, "approve", by="alice")
    status, cancelled, _ = await api.call(
        "POST", f"/v1/tool-call-batches/{body['id']}/cancel", {"reason": "plan changed"}
    )
    assert status == 200 and cancelled["status"] == "decided"
    assert [c["status"] for c in cancelled["calls"]] == ["approved", "cancelled", "allowed"]
    assert (await api.gate.get_request(second)).resolution_reason == "plan changed"


async def test_another_agents_batch_is_not_found(api: Api) -> None:
    body = await submit_batch(api, calls("deploy"))
    for method, path in (
        ("GET", f"/v1/tool-call-batches/{body['id']}"),
        ("POST", f"/v1/tool-call-batches/{body['id']}/cancel"),
    ):
        status, error, _ = await api.call(method, path, token=OTHER)
        assert status == 404 and error["error"]["code"] == "not_found"
    assert (await api.gate.get_request(body["calls"][0]["id"])).is_pending


@pytest.mark.parametrize(
    ("batch", "path"),
    [
        ([], "calls"),
        ([{"tool": "deploy"}] * (MAX_CALLS + 1), "calls"),
        ([{"tool": "deploy", "session": "s"}], "calls[0].session"),
        ([{"tool": "human_contact"}], "calls[0].tool"),
    ],
)
async def test_bad_batches_are_400_and_change_nothing(
    api: Api, batch: list[dict[str, Any]], path: str
) -> None:
    status, body, _ = await api.call("POST", "/v1/tool-call-batches", {"calls": batch})
    assert status == 400 and body["error"]["path"] == path, body
    assert await api.requests_in_store() == 0


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (b'{"calls": [{"tool": "deploy", "arguments": {"x": NaN}}]}', "calls[0].arguments.x"),
        (
            b'{"calls": [{"tool": "read_file"}, '
            b'{"tool": "deploy", "arguments": {"a": [-Infinity]}}]}',
            "calls[1].arguments.a[0]",
        ),
    ],
)
async def test_a_batch_with_a_non_finite_number_is_400_like_a_single_call(
    api: Api, raw: bytes, path: str
) -> None:
    """Python's JSON reads NaN and Infinity; stored, they would be text that is not JSON."""
    status, body, _ = await api.call("POST", "/v1/tool-call-batches", raw=raw)
    assert status == 400 and body["error"] == {
        "code": "invalid_body",
        "message": "must be a finite number",
        "path": path,
    }
    assert await api.requests_in_store() == 0
    assert api.decisions("allow", "policy") == 0


async def test_an_oversized_batch_is_a_json_413(api: Api) -> None:
    raw = json.dumps({"calls": [{"tool": "deploy", "arguments": {"x": "y" * 2_000_000}}]})
    status, body, _ = await api.call("POST", "/v1/tool-call-batches", raw=raw.encode())
    assert status == 413 and body["error"]["code"] == "payload_too_large"
    assert await api.requests_in_store() == 0


async def test_the_in_process_gate_checks_a_batch(api: Api) -> None:
    gate = api.gate
    batch = [
        ToolCall(tool="read_file", agent="ci-bot"),
        ToolCall(tool="deploy", arguments={"env": "a"}, agent="ci-bot"),
        ToolCall(tool="deploy", arguments={"env": "b"}, agent="ci-bot"),
    ]
    checking = asyncio.create_task(gate.check_many(batch))
    for _ in range(5000):
        pending = await gate.list_requests(status="pending")
        if len(pending) == 2 and all(gate.waiting_on(r.id) for r in pending):
            break
        await asyncio.sleep(0.001)
    by_env = {r.arguments["env"]: r for r in pending}
    assert by_env["a"].batch_id == by_env["b"].batch_id is not None
    await gate.resolve(by_env["a"].id, "approve", by="alice")
    await gate.resolve(by_env["b"].id, "deny", by="alice", reason="no")
    decisions = await within(checking)
    assert [d.verdict for d in decisions] == ["allow", "allow", "deny"]
    # check_many ran the approved call: the approval is used up.
    assert (await gate.get_request(by_env["a"].id)).consumed_at is not None


async def test_a_batch_of_another_agents_calls_is_refused(api: Api) -> None:
    with pytest.raises(ValueError, match="same agent"):
        await api.gate.submit_many(
            [ToolCall(tool="deploy", agent="ci-bot"), ToolCall(tool="deploy", agent="other")]
        )


# -- approvals are consumed once ----------------------------------------------------------


async def test_a_re_issue_after_approval_runs_once_then_asks_again(api: Api) -> None:
    request_id = await api.ask()
    await api.gate.resolve(request_id, "approve", by="alice")
    status, again = await api.submit("deploy", arguments={"env": "prod"})
    assert status == 200 and again["decision"] == "allow"
    assert again["consumed"] == request_id and again["decided_by"] == "alice"
    status, third = await api.submit("deploy", arguments={"env": "prod"})
    assert status == 201 and third["decision"] == "pending" and third["id"] != request_id
    # Reads by id keep answering approved.
    status, read, _ = await api.call("GET", f"/v1/tool-calls/{request_id}")
    assert (status, read["status"]) == (200, "approved")


async def test_a_long_poll_that_sees_the_approval_consumes_it(api: Api) -> None:
    request_id = await api.ask()
    poll = asyncio.create_task(api.call("GET", f"/v1/tool-calls/{request_id}?wait=30"))
    await api.parked(request_id)
    await api.gate.resolve(request_id, "approve", by="alice")
    _, polled, _ = await within(poll)
    assert polled["status"] == "approved"
    status, again = await api.submit("deploy", arguments={"env": "prod"})
    assert status == 201 and again["decision"] == "pending"  # that approval was used


async def test_two_concurrent_re_issues_consume_one_approval(api: Api) -> None:
    request_id = await api.ask()
    await api.gate.resolve(request_id, "approve", by="alice")
    answers = await asyncio.gather(
        *(api.submit("deploy", arguments={"env": "prod"}) for _ in range(8))
    )
    consumed = [body for _, body in answers if body.get("consumed") == request_id]
    assert len(consumed) == 1
    assert all(body["decision"] == "pending" for _, body in answers if body not in consumed)


async def test_a_denied_call_re_issued_answers_denied_without_a_new_request(api: Api) -> None:
    request_id = await api.ask()
    await api.gate.resolve(request_id, "deny", by="bob", reason="use staging")
    before = await api.requests_in_store()
    for _ in range(2):  # a denial is not consumed: it answers every re-issue in its life
        status, again = await api.submit("deploy", arguments={"env": "prod"})
        assert (status, again["decision"], again["reason"]) == (200, "deny", "use staging")
    assert await api.requests_in_store() == before
    api.clock.advance(3600)  # past the denied request's life: ask anew
    status, later = await api.submit("deploy", arguments={"env": "prod"})
    assert status == 201 and later["decision"] == "pending"


# -- decided since ---------------------------------------------------------------------


async def decided(api: Api, after: str | None = None, limit: int = 100) -> dict[str, Any]:
    path = f"/v1/tool-calls?status=decided&limit={limit}"
    if after is not None:
        path += f"&after={after}"
    status, body, _ = await api.call("GET", path)
    assert status == 200, body
    return body


async def test_decided_since_reads_each_decision_once_in_decision_order(api: Api) -> None:
    ids = [await api.ask(n=n) for n in range(5)]
    first = await decided(api)
    assert first["tool_calls"] == [] and first["next"] is None
    for request_id in (ids[3], ids[0], ids[4]):
        await api.gate.resolve(request_id, "approve", by="alice")
    page = await decided(api, limit=2)
    assert [c["id"] for c in page["tool_calls"]] == [ids[3], ids[0]]
    page = await decided(api, page["next"])
    assert [c["id"] for c in page["tool_calls"]] == [ids[4]]
    await api.gate.cancel(ids[1], by="agent:ci-bot")
    again = await decided(api, page["next"])
    assert [c["id"] for c in again["tool_calls"]] == [ids[1]]
    assert (await decided(api, again["next"]))["tool_calls"] == []
    # Reading what was decided uses nothing: the re-issue consumes the approval.
    status, rerun = await api.submit("deploy", arguments={"n": 3})
    assert (status, rerun["consumed"]) == (200, ids[3])


async def test_decided_since_never_skips_or_repeats_under_concurrent_decisions(api: Api) -> None:
    ids = [await api.ask(n=n) for n in range(40)]
    seen: list[str] = []
    cursor: str | None = None

    async def read_all() -> None:
        nonlocal cursor
        while len(seen) < len(ids):
            page = await decided(api, cursor, limit=3)
            seen.extend(c["id"] for c in page["tool_calls"])
            cursor = page["next"]
            await asyncio.sleep(0)

    reader = asyncio.create_task(read_all())
    verdicts = ["approve" if n % 2 else "deny" for n in range(len(ids))]
    await asyncio.gather(
        *(api.gate.resolve(i, v, by="alice") for i, v in zip(ids, verdicts, strict=True))  # type: ignore[arg-type]
    )
    await within(reader)
    assert sorted(seen) == sorted(ids) and len(seen) == len(ids)


async def test_an_expired_request_is_decided_too(api: Api) -> None:
    request_id = await api.ask()
    api.clock.advance(3600)
    await api.gate.expire_overdue()
    page = await decided(api)
    assert [(c["id"], c["status"]) for c in page["tool_calls"]] == [(request_id, "expired")]


async def test_after_needs_status_decided_and_a_well_formed_cursor(api: Api) -> None:
    for query in ("after=1.abc", "status=decided&after=x", "status=decided&after=1.a.b"):
        status, body, _ = await api.call("GET", f"/v1/tool-calls?{query}")
        assert status == 400, (query, body)


async def test_a_cursor_past_every_decision_number_reads_nothing(api: Api) -> None:
    """The cursor's number may be any 18 digits; PostgreSQL's column stops at 2**31 - 1."""
    await api.gate.resolve(await api.ask(), "approve", by="alice")
    for seq in (2**31 - 1, 2**31, 10**18 - 1):
        page = await decided(api, f"{seq}.abc")
        assert page == {"tool_calls": [], "next": f"{seq}.abc"}


# -- events carry the call ------------------------------------------------------------


async def test_events_carry_the_call_masked_and_the_outcome(api: Api) -> None:
    stream = await open_stream(api)
    body = await submit_batch(
        api, [{"tool": "deploy", "arguments": {"env": "prod", "api_token": "s3cr3t-v4lue"}}]
    )
    request_id = body["calls"][0]["id"]
    requested = await stream.events(lambda e: e.kind == "requested")
    event = requested[-1]
    assert event.arguments == {"env": "prod", "api_token": "********"}
    assert (event.tool, event.agent, event.risk) == ("deploy", "ci-bot", "write")
    assert event.batch_id == body["id"] and event.outcome is None
    await api.gate.resolve(request_id, "approve", by="alice", scope="session")
    resolved: EventOut = (await stream.events(lambda e: e.kind == "resolved"))[-1]
    assert (resolved.outcome, resolved.decided_by) == ("approved", "alice")  # no session: once
    assert "s3cr3t" not in resolved.model_dump_json()
    await stream.resp.release()


async def test_a_session_approval_is_told_as_such(api: Api) -> None:
    stream = await open_stream(api)
    status, body = await api.submit("deploy", arguments={"env": "x"}, session="chat-1")
    assert status == 201
    await api.gate.resolve(body["id"], "approve", by="alice", scope="session")
    resolved = (await stream.events(lambda e: e.kind == "resolved"))[-1]
    assert (resolved.outcome, resolved.session) == ("approved_session", "chat-1")
    await api.gate.resolve(await api.ask(), "deny", by="bob", reason="why not")
    denied = (await stream.events(lambda e: e.kind == "resolved"))[-1]
    assert (denied.outcome, denied.reason, denied.decided_by) == ("denied", "why not", "bob")
    await stream.resp.release()
