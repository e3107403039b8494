"""The agent HTTP API through the real app: decisions, long-polls, ownership, errors, SSE.

Every test talks to ``build_app``'s server over loopback with aiohttp's test
client, on a real SQLite file and a manual clock; approvers' decisions come
from the gate itself (``app[GATE].resolve``), as a webhook would make them.
Every JSON response is parsed with the response models, so the OpenAPI
schemas generated from them are checked against real traffic as a side effect.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tapgate.config import Config, parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.gate.models import GateEvent, Request, ToolCall
from tapgate.server.api.batch_models import BatchCallIn, BatchIn, BatchOut
from tapgate.server.api.events import EventOut
from tapgate.server.api.models import (
    CancelIn,
    ErrorOut,
    SandboxOut,
    ToolCallIn,
    ToolCallList,
    ToolCallOut,
)
from tapgate.server.api.openapi import EXAMPLES, openapi_document
from tapgate.server.api.stream import HEARTBEAT_INTERVAL, STREAM_QUEUE_SIZE
from tapgate.server.app import build_app
from tapgate.server.keys import GATE, METRICS, STORE
from tests.strategies import JSON

CI = "ci-bot-token-0123456789abcdef"
OTHER = "other-agent-token-0123456789"
MAX_WAIT = 60

Client = TestClient[web.Request, web.Application]
T = TypeVar("T")


def make_config(db_url: str, **server: Any) -> Config:
    return parse_config(
        {
            # The heartbeat's sweeps are not under test here; keep them out of the way.
            "server": {"max_wait": MAX_WAIT, "heartbeat_interval": 3600} | server,
            "store": {"url": db_url},
            "agents": [{"name": "ci-bot", "token": CI}, {"name": "other", "token": OTHER}],
            "approvers": [{"name": "alice", "slack": "U0ALICE"}, {"name": "bob", "slack": "U0BOB"}],
            "policy": {
                "default_approvers": ["alice"],
                "tools": {"read_file": {"risk": "read_only"}, "drop_db": {"risk": "destructive"}},
                "rules": [
                    {
                        "tool": "deploy",
                        "action": "ask",
                        "approvers": ["alice", "bob"],
                        "reason": "deploys need a human",
                    },
                ],
            },
        }
    )


@dataclass
class Api:
    """The served app plus a few verbs; every response body is checked against its model."""

    client: Client
    clock: ManualClock

    @property
    def app(self) -> web.Application:
        return self.client.app

    @property
    def gate(self) -> Gate:
        return self.app[GATE]

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = CI,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any], ClientResponse]:
        sent = dict(headers or {})
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token}")
        data: Any = (
            io.BytesIO(raw) if raw is not None else (None if body is None else json.dumps(body))
        )
        async with self.client.request(method, path, data=data, headers=sent) as resp:
            text = await resp.text()
        assert resp.content_type == "application/json", (resp.status, text)
        data = json.loads(text)
        if resp.status >= 400:
            ErrorOut.model_validate_json(text)
        elif "tool_calls" in data:
            ToolCallList.model_validate_json(text)
        elif "calls" in data:
            BatchOut.model_validate_json(text)
        elif "openapi" not in data:
            ToolCallOut.model_validate_json(text)
        return resp.status, data, resp

    async def submit(self, tool: str, token: str = CI, **fields: Any) -> tuple[int, dict[str, Any]]:
        status, body, _ = await self.call(
            "POST", "/v1/tool-calls", {"tool": tool, **fields}, token=token
        )
        return status, body

    async def ask(self, token: str = CI, **arguments: Any) -> str:
        """A new pending deploy request; its id."""
        status, body = await self.submit("deploy", token, arguments=arguments or {"env": "prod"})
        assert status == 201 and body["decision"] == "pending"
        return str(body["id"])

    async def parked(self, request_id: str) -> None:
        """Return once a long-poll waits on ``request_id``.

        The gate has no public waiter count; this private read only decides
        *when* the test acts (after the poll is parked), never what it asserts.
        """
        for _ in range(5000):
            if self.gate.waiting_on(request_id):
                return
            await asyncio.sleep(0.001)
        raise AssertionError(f"no long-poll parked on {request_id}")

    async def requests_in_store(self) -> int:
        return len(await self.app[STORE].list_requests(limit=1000))

    def decisions(self, verdict: str, source: str) -> float:
        labels = {"verdict": verdict, "source": source}
        value = self.app[METRICS].registry.get_sample_value("tapgate_decisions_total", labels)
        return value or 0.0


async def within(awaitable: Awaitable[T], seconds: float = 10) -> T:
    """Await with a bound, so a poll that never returns fails the test instead of hanging it."""
    return await asyncio.wait_for(awaitable, seconds)


@pytest.fixture
def config(migrated_db_url: str, request: pytest.FixtureRequest) -> Config:
    """The test config; ``indirect`` parametrisation passes extra ``server`` keys."""
    return make_config(migrated_db_url, **getattr(request, "param", {}))


@pytest.fixture
async def api(
    config: Config,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> Api:
    # config (and so the database) comes first so that it is torn down after the app.
    app = build_app(config, clock=clock, notifiers=[RecordingNotifier("console")])
    return Api(client=await aiohttp_client(app), clock=clock)


# -- submitting ------------------------------------------------------------------------


async def test_a_read_only_tool_is_allowed_at_once_and_counted(api: Api) -> None:
    status, body = await api.submit("read_file", arguments={"path": "README.md"})
    assert status == 200
    assert body["id"] is None and body["decision"] == "allow" and body["status"] == "allowed"
    assert body["source"] == "policy" and body["rule"] == "policy.risk_defaults.read_only"
    assert body["expires_at"] is None and body["approvers"] == [] and body["reused"] is False
    assert api.decisions("allow", "policy") == 1
    assert await api.requests_in_store() == 0


async def test_answers_decided_at_once_name_their_own_call(api: Api) -> None:
    """Answers decided at once are rendered once per distinct answer: never another call's."""
    answers = []
    for tool, session in [("read_file", "s1"), ("read_file", "s2"), ("read_file", None)] * 2:
        fields = {"session": session} if session is not None else {}
        status, body = await api.submit(tool, arguments={"path": "README.md"}, **fields)
        assert status == 200 and (body["tool"], body["session"]) == (tool, session)
        answers.append(body)
    assert answers[:3] == answers[3:]
    status, body = await api.submit("drop_db", session="s1")
    assert (status, body["decision"], body["tool"]) == (200, "deny", "drop_db")
    assert body["session"] == "s1"
    assert api.decisions("allow", "policy") == 6 and api.decisions("deny", "policy") == 1


async def test_a_tool_call_cannot_pose_as_a_question(api: Api) -> None:
    """A typed answer approves a question: ``human_contact`` is never an agent's tool call."""
    status, body = await api.submit("human_contact", arguments={"command": "rm -rf /"})
    assert status == 400
    assert body["error"]["path"] == "tool" and "reserved" in body["error"]["message"]
    assert await api.requests_in_store() == 0
    with pytest.raises(ValueError, match="reserved"):
        await api.gate.submit(ToolCall(tool="human_contact", arguments={}, agent="ci-bot"))
    with pytest.raises(ValueError, match="must use the tool"):
        await api.gate.submit(ToolCall(tool="deploy", agent="ci-bot"), question=True)
    assert await api.requests_in_store() == 0


async def test_a_destructive_tool_is_denied_at_once_and_counted(api: Api) -> None:
    status, body = await api.submit("drop_db", arguments={"name": "prod"})
    assert status == 200
    assert body["id"] is None and body["decision"] == "deny" and body["status"] == "denied"
    assert "destructive" in body["reason"]
    assert api.decisions("deny", "policy") == 1


async def test_an_ask_creates_a_pending_request_and_a_repeat_reuses_it(api: Api) -> None:
    status, first, resp = await api.call(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {"env": "prod"}, "session": "s1"}
    )
    assert status == 201
    assert resp.headers["Location"] == f"/v1/tool-calls/{first['id']}"
    assert first["decision"] == "pending" and first["status"] == "pending"
    assert first["reason"] == "deploys need a human" and first["rule"] == "policy.rules[0]"
    assert first["approvers"] == ["alice", "bob"] and first["session"] == "s1"
    assert first["decided_by"] is None and first["source"] is None
    assert first["expires_at"] is not None

    status, again = await api.submit("deploy", arguments={"env": "prod"}, session="s1")
    assert status == 200 and again["reused"] is True and again["id"] == first["id"]
    assert api.decisions("allow", "policy") == api.decisions("deny", "policy") == 0


async def test_submit_with_wait_returns_when_an_approver_decides(api: Api) -> None:
    poll = asyncio.create_task(api.submit("deploy", arguments={"env": "prod"}, wait=30))
    for _ in range(5000):
        pending = await api.app[STORE].list_requests(status="pending")
        if pending:
            break
        await asyncio.sleep(0.001)
    await api.parked(pending[0].id)
    await api.gate.resolve(pending[0].id, "approve", by="alice")
    status, body = await within(poll)
    assert status == 201
    assert body["decision"] == "allow" and body["status"] == "approved"
    assert body["decided_by"] == "alice" and body["source"] == "approver"
    assert body["resolved_at"] is not None


# -- long-polling ----------------------------------------------------------------------


async def test_a_long_poll_returns_when_the_request_is_resolved(api: Api) -> None:
    request_id = await api.ask()
    poll = asyncio.create_task(api.call("GET", f"/v1/tool-calls/{request_id}?wait=30"))
    await api.parked(request_id)
    assert not poll.done()
    await api.gate.resolve(request_id, "deny", by="bob", reason="not on a Friday")
    status, body, _ = await within(poll)
    assert status == 200
    assert body["decision"] == "deny" and body["status"] == "denied"
    assert body["decided_by"] == "bob" and body["reason"] == "not on a Friday"


async def test_a_long_poll_that_times_out_reports_pending(api: Api) -> None:
    request_id = await api.ask()
    # Half a second stays below the gate's reconciliation sweep (1 s in build_app), which
    # is not under test: on PostgreSQL a sweep cancelled mid-query at teardown can
    # swallow its cancellation and hang Gate.close (reported; see the store's read()).
    poll = asyncio.create_task(api.call("GET", f"/v1/tool-calls/{request_id}?wait=0.5"))
    await api.parked(request_id)
    api.clock.advance(0.5)
    status, body, _ = await within(poll)
    assert status == 200 and body["decision"] == "pending" and body["id"] == request_id


async def test_parked_long_polls_hold_no_database_connection(api: Api) -> None:
    # SQLite runs every transaction on one thread: a poll that held it would
    # block the submit and the list below until the polls ended.
    request_id = await api.ask()
    polls = [
        asyncio.create_task(api.call("GET", f"/v1/tool-calls/{request_id}?wait=60"))
        for _ in range(40)
    ]
    for _ in range(5000):
        if api.gate.waiting_on(request_id) == len(polls):
            break
        await asyncio.sleep(0.001)
    status, _ = await api.submit("read_file")
    assert status == 200
    status, listed, _ = await api.call("GET", "/v1/tool-calls?status=pending")
    assert status == 200 and [c["id"] for c in listed["tool_calls"]] == [request_id]
    await api.gate.resolve(request_id, "approve", by="alice")
    results = await within(asyncio.gather(*polls))
    assert {body["status"] for _, body, _ in results} == {"approved"}


async def test_a_parked_long_poll_answers_at_once_when_the_server_shuts_down(api: Api) -> None:
    request_id = await api.ask()
    poll = asyncio.create_task(api.call("GET", f"/v1/tool-calls/{request_id}?wait=60"))
    await api.parked(request_id)
    await api.client.server.close()
    status, body, _ = await within(poll)
    assert status == 200 and body["decision"] == "pending"


# -- cancelling, listing, ownership ----------------------------------------------------


async def test_cancel_then_a_second_cancel_is_a_409_with_the_current_state(api: Api) -> None:
    request_id = await api.ask()
    status, body, _ = await api.call(
        "POST", f"/v1/tool-calls/{request_id}/cancel", {"reason": "no longer needed"}
    )
    assert status == 200 and body["status"] == "cancelled" and body["decision"] == "deny"
    assert body["decided_by"] == "agent:ci-bot" and body["reason"] == "no longer needed"

    status, body, _ = await api.call("POST", f"/v1/tool-calls/{request_id}/cancel")
    assert status == 409
    assert body["error"]["code"] == "already_decided"
    assert body["tool_call"]["status"] == "cancelled"


async def test_a_cancel_reason_with_control_characters_is_a_400(api: Api) -> None:
    """PostgreSQL cannot store NUL: refused with the field's path, nothing cancelled."""
    request_id = await api.ask()
    status, body, _ = await api.call(
        "POST", f"/v1/tool-calls/{request_id}/cancel", {"reason": "stop\x00now"}
    )
    assert status == 400 and body["error"]["path"] == "reason"
    assert (await api.gate.get_request(request_id)).status == "pending"
    status, body, _ = await api.call(
        "POST", f"/v1/tool-calls/{request_id}/cancel", {"reason": "line one\nline two\t!"}
    )
    assert status == 200 and body["reason"] == "line one\nline two\t!"


async def test_cancelling_an_approved_request_is_a_409(api: Api) -> None:
    request_id = await api.ask()
    await api.gate.resolve(request_id, "approve", by="alice")
    status, body, _ = await api.call("POST", f"/v1/tool-calls/{request_id}/cancel")
    assert status == 409 and body["tool_call"]["decision"] == "allow"


async def test_another_agents_request_is_a_404_like_an_unknown_one(api: Api) -> None:
    theirs = await api.ask(token=OTHER)
    unknown = await api.call("GET", "/v1/tool-calls/no-such-id")
    assert unknown[0] == 404 and unknown[1]["error"]["code"] == "not_found"
    for method, path in [
        ("GET", f"/v1/tool-calls/{theirs}"),
        ("GET", f"/v1/tool-calls/{theirs}?wait=5"),
        ("POST", f"/v1/tool-calls/{theirs}/cancel"),
    ]:
        status, body, _ = await api.call(method, path)
        assert (status, body) == unknown[:2]
    status, listed, _ = await api.call("GET", "/v1/tool-calls")
    assert listed["tool_calls"] == []
    assert (await api.gate.get_request(theirs)).status == "pending"


async def test_an_id_with_a_nul_is_a_404_like_an_unknown_one(api: Api) -> None:
    """PostgreSQL cannot compare text holding NUL: looked up as it came, it was a 500."""
    mine = await api.ask()
    for method, path in [
        ("GET", f"/v1/tool-calls/{mine}%00"),
        ("GET", "/v1/tool-calls/%00?wait=5"),
        ("POST", f"/v1/tool-calls/{mine}%00/cancel"),
        ("GET", "/v1/tool-call-batches/%00"),
        ("POST", "/v1/tool-call-batches/%00/cancel"),
    ]:
        status, body, _ = await api.call(method, path)
        assert (status, body["error"]["code"]) == (404, "not_found"), (path, body)
    assert (await api.gate.get_request(mine)).status == "pending"


async def test_the_list_holds_only_the_callers_requests_filtered_and_limited(api: Api) -> None:
    mine = [await api.ask(n=str(n)) for n in range(3)]
    await api.ask(token=OTHER)
    await api.gate.resolve(mine[0], "approve", by="alice")
    _, pending, _ = await api.call("GET", "/v1/tool-calls?status=pending")
    assert {c["id"] for c in pending["tool_calls"]} == set(mine[1:])
    _, limited, _ = await api.call("GET", "/v1/tool-calls?limit=1")
    assert len(limited["tool_calls"]) == 1
    _, everything, _ = await api.call("GET", "/v1/tool-calls")
    assert {c["id"] for c in everything["tool_calls"]} == set(mine)


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("POST", "/approve", None),
        ("POST", "/deny", None),
        ("POST", "/resolve", {"decision": "approve", "by": "alice"}),
        ("POST", "/decision", {"verdict": "allow"}),
        ("POST", "", {"status": "approved"}),
        ("PUT", "", {"status": "approved"}),
        ("PATCH", "", {"status": "approved"}),
        ("DELETE", "", None),
        ("GET", "/approve", None),
    ],
)
async def test_no_route_lets_an_agent_resolve(
    api: Api, method: str, suffix: str, body: Any
) -> None:
    request_id = await api.ask()
    status, error, resp = await api.call(method, f"/v1/tool-calls/{request_id}{suffix}", body)
    assert status in (404, 405)
    assert error["error"]["code"] in ("not_found", "method_not_allowed")
    if status == 405:
        assert "GET" in resp.headers["Allow"]
    assert (await api.gate.get_request(request_id)).status == "pending"


# -- authentication and errors -------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        f"Basic {CI}",
        f"Token {CI}",
        "Bearer not-a-known-token-1234",
        f"Bearer {CI}x",
        f"Bearer {CI[:-1]}",
        "Bearer " + "x" * 5000,
    ],
)
async def test_requests_without_a_valid_token_are_401(api: Api, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path in [
        ("POST", "/v1/tool-calls"),
        ("GET", "/v1/tool-calls"),
        ("GET", "/v1/events"),
        ("GET", "/v1/no-such-route"),
    ]:
        status, body, resp = await api.call(
            method, path, {"tool": "deploy"}, token=None, headers=headers
        )
        assert status == 401 and body["error"]["code"] == "unauthorized"
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert await api.requests_in_store() == 0


async def test_the_bearer_scheme_is_case_insensitive(api: Api) -> None:
    status, _, _ = await api.call(
        "GET", "/v1/tool-calls", token=None, headers={"Authorization": f"bearer {CI}"}
    )
    assert status == 200


@pytest.mark.parametrize(
    ("raw", "code", "path"),
    [
        (b"", "invalid_json", None),
        (b"{not json", "invalid_json", None),
        (b'{"tool": "deploy", "arguments": {"x": "\\ud800"}}', "invalid_json", None),
        (b"[]", "invalid_body", None),
        (b'"deploy"', "invalid_body", None),
        (b"{}", "invalid_body", "tool"),
        (b'{"tool": 1}', "invalid_body", "tool"),
        (b'{"tool": ""}', "invalid_body", "tool"),
        (b'{"tool": "de\\u0000ploy"}', "invalid_body", "tool"),
        (b'{"tool": "deploy\\u202e_gnirts"}', "invalid_body", "tool"),  # a bidi override
        (b'{"tool": "deploy\\u2028ok"}', "invalid_body", "tool"),  # a line separator
        (b'{"tool": "deploy", "session": "s\\u0085"}', "invalid_body", "session"),  # NEL
        (b'{"tool": "' + b"t" * 201 + b'"}', "invalid_body", "tool"),
        (b'{"tool": "deploy", "wiat": 3}', "invalid_body", "wiat"),
        (b'{"tool": "deploy", "arguments": []}', "invalid_body", "arguments"),
        (b'{"tool": "deploy", "arguments": {"x": NaN}}', "invalid_body", "arguments.x"),
        (
            b'{"tool": "deploy", "arguments": {"a": {"b": [1, 1e999]}}}',
            "invalid_body",
            "arguments.a.b[1]",
        ),
        (b'{"tool": "deploy", "session": 7}', "invalid_body", "session"),
        (b'{"tool": "deploy", "risk": "harmless"}', "invalid_body", "risk"),
        (b'{"tool": "deploy", "wait": "5"}', "invalid_body", "wait"),
        (b'{"tool": "deploy", "wait": true}', "invalid_body", "wait"),
        (b'{"tool": "deploy", "wait": -1}', "invalid_body", "wait"),
        (b'{"tool": "deploy", "wait": 61}', "invalid_body", "wait"),
        (b'{"tool": "deploy", "wait": Infinity}', "invalid_body", "wait"),
    ],
)
async def test_a_bad_body_is_400_naming_the_field(
    api: Api, raw: bytes, code: str, path: str | None
) -> None:
    status, body, _ = await api.call("POST", "/v1/tool-calls", raw=raw)
    assert status == 400
    assert body["error"]["code"] == code and body["error"]["path"] == path
    assert await api.requests_in_store() == 0


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("/v1/tool-calls/ID?wait=abc", "wait"),
        ("/v1/tool-calls/ID?wait=61", "wait"),
        ("/v1/tool-calls/ID?wait=nan", "wait"),
        ("/v1/tool-calls/ID?wiat=1", "wiat"),
        ("/v1/tool-calls?limit=0", "limit"),
        ("/v1/tool-calls?limit=many", "limit"),
        ("/v1/tool-calls?status=maybe", "status"),
    ],
)
async def test_a_bad_query_is_400_naming_the_parameter(api: Api, target: str, path: str) -> None:
    request_id = await api.ask()
    status, body, _ = await api.call("GET", target.replace("ID", request_id))
    assert status == 400 and body["error"] == {
        "code": "invalid_query",
        "message": body["error"]["message"],
        "path": path,
    }


async def test_a_bad_cancel_body_is_400(api: Api) -> None:
    request_id = await api.ask()
    status, body, _ = await api.call("POST", f"/v1/tool-calls/{request_id}/cancel", {"reason": 5})
    assert status == 400 and body["error"]["path"] == "reason"
    assert (await api.gate.get_request(request_id)).status == "pending"


async def test_unknown_routes_and_methods_under_v1_are_json(api: Api) -> None:
    status, body, _ = await api.call("GET", "/v1/nothing-here")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body, resp = await api.call("DELETE", "/v1/tool-calls")
    assert status == 405 and body["error"]["code"] == "method_not_allowed"
    assert set(resp.headers["Allow"].split(",")) >= {"GET", "POST"}


async def test_a_compressed_body_is_415_before_it_is_read(api: Api) -> None:
    """No client compresses requests; a decoder is attack surface.

    See ``tests/server/test_bodies.py``.
    """
    status, body, _ = await api.call(
        "POST", "/v1/tool-calls", raw=b'{"tool": "deploy"}', headers={"Content-Encoding": "gzip"}
    )
    assert status == 415 and body["error"]["code"] == "unsupported_encoding"
    assert await api.requests_in_store() == 0


async def test_an_oversized_body_is_a_json_413(api: Api) -> None:
    raw = json.dumps({"tool": "deploy", "arguments": {"blob": "x" * 2_000_000}}).encode()
    status, body, _ = await api.call("POST", "/v1/tool-calls", raw=raw)
    assert status == 413 and body["error"]["code"] == "payload_too_large"
    assert await api.requests_in_store() == 0


# -- server-sent events --------------------------------------------------------------------


class Stream:
    """An open ``GET /v1/events`` response, read one frame at a time."""

    def __init__(self, resp: ClientResponse) -> None:
        self.resp = resp

    async def frame(self) -> str:
        raw = await asyncio.wait_for(self.resp.content.readuntil(b"\n\n"), timeout=10)
        return raw.decode()

    async def events(self, until: Callable[[EventOut], bool]) -> list[EventOut]:
        seen: list[EventOut] = []
        while not seen or not until(seen[-1]):
            text = await self.frame()
            if text.startswith(":"):
                continue
            kind_line, data_line = text.strip().split("\n")
            event = EventOut.model_validate_json(data_line.removeprefix("data: "))
            assert kind_line == f"event: {event.kind}"
            seen.append(event)
        return seen


async def open_stream(api: Api, token: str = CI) -> Stream:
    resp = await api.client.get("/v1/events", headers={"Authorization": f"Bearer {token}"})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    stream = Stream(resp)
    assert await stream.frame() == ": connected\n\n"
    return stream


async def test_the_event_stream_carries_the_callers_events_only(api: Api) -> None:
    stream = await open_stream(api)
    theirs = await api.ask(token=OTHER)
    mine = await api.ask()
    await api.gate.resolve(theirs, "approve", by="alice")
    await api.gate.resolve(mine, "approve", by="alice")
    events = await stream.events(until=lambda e: e.kind == "resolved")
    assert {e.request_id for e in events} == {mine}
    kinds = [e.kind for e in events]
    assert kinds[0] == "requested" and kinds[-1] == "resolved"
    assert set(kinds) <= {"requested", "notified", "resolved"}
    assert events[-1].status == "approved" and events[-1].decision == "allow"
    assert events[-1].tool == "deploy" and events[-1].at == api.clock.now()
    stream.resp.close()


async def test_the_event_stream_reports_cancellation(api: Api) -> None:
    stream = await open_stream(api)
    mine = await api.ask()
    await api.call("POST", f"/v1/tool-calls/{mine}/cancel")
    events = await stream.events(until=lambda e: e.kind == "cancelled")
    assert events[-1].request_id == mine and events[-1].decision == "deny"
    stream.resp.close()


async def test_the_event_stream_sends_a_heartbeat(api: Api) -> None:
    stream = await open_stream(api)
    api.clock.advance(HEARTBEAT_INTERVAL)
    assert await stream.frame() == ": heartbeat\n\n"
    api.clock.advance(HEARTBEAT_INTERVAL)
    assert await stream.frame() == ": heartbeat\n\n"
    stream.resp.close()


async def test_the_event_stream_ends_cleanly_on_shutdown(api: Api) -> None:
    stream = await open_stream(api)
    closing = asyncio.create_task(api.client.server.close())
    rest = await asyncio.wait_for(stream.resp.content.read(), timeout=10)
    assert rest == b""
    await closing
    # The bus has no public subscriber count; the stream's queue must be gone.
    assert api.app[GATE].bus.open_streams == 0


async def test_other_agents_bursts_never_evict_the_callers_events(api: Api) -> None:
    """The stream's buffer holds the caller's events only: theirs are filtered at the door."""
    stream = await open_stream(api)
    mine = await api.ask()
    await stream.events(until=lambda e: e.kind == "requested")
    template = await api.gate.get_request(mine)
    theirs = dataclasses.replace(template, id="t" * 22, agent="other")
    for _ in range(STREAM_QUEUE_SIZE * 2):
        api.app[GATE].bus.publish(GateEvent(kind="expired", request=theirs, at=api.clock.now()))
    await api.gate.cancel(mine, by="ci-bot")
    events = await stream.events(until=lambda e: e.kind == "cancelled")
    assert {e.request_id for e in events} == {mine}  # perhaps a "notified" first
    stream.resp.close()


async def test_a_stream_that_lost_events_says_so_and_ends(api: Api) -> None:
    stream = await open_stream(api)
    mine = await api.ask()
    await stream.events(until=lambda e: e.kind == "requested")
    request = await api.gate.get_request(mine)
    for _ in range(STREAM_QUEUE_SIZE + 10):  # at once: the pump cannot keep up
        api.app[GATE].bus.publish(GateEvent(kind="expired", request=request, at=api.clock.now()))
    rest = (await asyncio.wait_for(stream.resp.content.read(), timeout=10)).decode()
    last = rest.rstrip("\n").split("\n\n")[-1]  # the stream then ends: read() returned
    assert last.startswith("event: overflow\ndata: "), rest[-200:]
    assert json.loads(last.split("data: ", 1)[1])["dropped"] >= 10


async def stalled_client(api: Api) -> tuple[socket.socket, Request]:
    """A raw event-stream client that never reads, and a request whose events are ~4 KB."""
    url = api.client.make_url("/v1/events")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((url.host, url.port))
    sock.sendall(
        f"GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {CI}\r\n\r\n".encode()
    )
    await api.ask()
    request = await api.gate.get_request((await api.gate.store.list_requests())[0].id)
    return sock, dataclasses.replace(request, tool="t" * 4000)


@pytest.mark.parametrize("config", [{"stream_write_timeout": 0.5}], indirect=True)
async def test_a_client_that_stops_reading_neither_holds_the_server_nor_its_shutdown(
    api: Api,
) -> None:
    """A stalled stream is dropped after ``stream_write_timeout``, and at once on shutdown."""
    sock, big = await stalled_client(api)
    bus = api.app[GATE].bus
    for _ in range(2000):  # fill the socket buffers until a write has to wait
        for _ in range(20):
            bus.publish(GateEvent(kind="expired", request=big, at=api.clock.now()))
        await asyncio.sleep(0.005)
        if not bus.open_streams:
            break  # the stalled write timed out and the stream was dropped
    assert bus.open_streams == 0, "the stalled stream was never dropped"
    started = time.monotonic()
    await asyncio.wait_for(api.client.server.close(), 10)
    assert time.monotonic() - started < 5
    sock.close()


async def test_shutdown_does_not_wait_for_a_stalled_client_to_drain(api: Api) -> None:
    """Buffers full, no write waiting: ending the stream must not wait for the client."""
    sock, big = await stalled_client(api)
    # aiohttp's private state only tells the test *when* to stop the server: once
    # the socket is full (protocol paused) with no write waiting and the pump idle.
    assert api.client.server.runner is not None and api.client.server.runner.server is not None
    connections = api.client.server.runner.server.connections
    subscriptions = api.app[GATE].bus._subscriptions
    for _ in range(5000):
        api.app[GATE].bus.publish(GateEvent(kind="expired", request=big, at=api.clock.now()))
        await asyncio.sleep(0.002)
        handler = connections[0] if connections else None
        idle = subscriptions and subscriptions[0].queue.empty()
        if handler is not None and handler._paused and handler._drain_waiter is None and idle:
            break
    else:
        pytest.fail("the stream never reached a full socket with no write waiting")
    started = time.monotonic()
    await asyncio.wait_for(api.client.server.close(), 20)
    assert time.monotonic() - started < 5
    sock.close()


async def test_head_on_the_event_stream_is_refused(api: Api) -> None:
    resp = await api.client.head("/v1/events", headers={"Authorization": f"Bearer {CI}"})
    assert resp.status == 405


# -- the OpenAPI document ------------------------------------------------------------------


async def test_openapi_documents_exactly_the_routes_under_v1(api: Api) -> None:
    status, document, _ = await api.call("GET", "/v1/openapi.json", token=None)
    assert status == 200
    assert document == json.loads(json.dumps(openapi_document(MAX_WAIT)))
    assert document["openapi"].startswith("3.1")
    registered = {
        (route.method, route.resource.canonical)
        for route in api.app.router.routes()
        if route.resource is not None
        and route.resource.canonical.startswith("/v1/")
        and route.method != "HEAD"  # aiohttp adds HEAD to every GET
    }
    documented = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    assert registered == documented


def test_openapi_examples_validate_against_the_models() -> None:
    models: dict[str, type[BaseModel]] = {
        "ToolCallIn": ToolCallIn,
        "CancelIn": CancelIn,
        "ToolCallOut": ToolCallOut,
        "ErrorOut": ErrorOut,
        "EventOut": EventOut,
        "SandboxOut": SandboxOut,
        "BatchCallIn": BatchCallIn,
        "BatchIn": BatchIn,
        "BatchOut": BatchOut,
    }
    document = openapi_document(MAX_WAIT)
    for name, model in models.items():
        [example] = document["components"]["schemas"][name]["examples"]
        assert example == EXAMPLES[name]
        model.model_validate_json(json.dumps(example), context={"max_wait": MAX_WAIT})


def test_openapi_refs_all_resolve_and_wait_carries_the_configured_maximum() -> None:
    document = openapi_document(MAX_WAIT)
    text = json.dumps(document)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        node: Any = document
        for key in ref.removeprefix("#/").split("/"):
            node = node[key]
    wait = document["components"]["schemas"]["ToolCallIn"]["properties"]["wait"]
    assert {"type": "number", "minimum": 0, "maximum": MAX_WAIT} in wait["anyOf"]


# -- anything at all: never a 5xx, never a change ------------------------------------------
#
# One app serves every example of a test: building the app (and migrating its
# database) per example would be far slower, and sharing it makes the claim
# stronger: the state must stay untouched across all examples in a row.
# pytest-asyncio runs each example in the fixture's event loop, so reusing the
# function-scoped fixture is deliberate. The bodies are invalid by
# construction (not by asking the model under test), so the oracle is independent.

FIELDS = ("tool", "arguments", "session", "risk", "wait")
NOT_A_STRING = JSON.filter(lambda v: not isinstance(v, str))
NOT_AN_OBJECT = JSON.filter(lambda v: not isinstance(v, dict))
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=64)
SHARED = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _not_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return True
    return False


@st.composite
def malformed_bodies(draw: st.DrawFn) -> bytes:
    """Bodies every valid server must refuse, each for a reason of its own."""
    base: dict[str, Any] = {"tool": "deploy", "arguments": {"env": "prod"}}
    kind = draw(st.sampled_from(["bytes", "not_object", "extra", "tool", "arguments", "wait"]))
    if kind == "bytes":
        return draw(st.binary(max_size=256).filter(_not_json))
    if kind == "not_object":
        return json.dumps(draw(NOT_AN_OBJECT)).encode()
    if kind == "extra":
        key = draw(st.text(max_size=10).filter(lambda k: k not in FIELDS))
        base[key] = draw(JSON)
    elif kind == "tool":
        base["tool"] = draw(NOT_A_STRING | st.just(""))
    elif kind == "arguments":
        base["arguments"] = draw(NOT_AN_OBJECT)
    else:
        out_of_range = st.floats(max_value=-0.001) | st.floats(min_value=MAX_WAIT + 0.001)
        base["wait"] = draw(out_of_range.filter(lambda f: f == f) | st.text() | st.booleans())
    return json.dumps(base).encode()


async def assert_untouched(api: Api) -> None:
    assert await api.requests_in_store() == 0
    assert api.decisions("allow", "policy") == api.decisions("deny", "policy") == 0


@SHARED
@given(
    raw=malformed_bodies(),
    extra=st.dictionaries(st.sampled_from(["Content-Type", "Accept", "X-Other"]), HEADER_TEXT),
    # Any other coding is a 415 before the body is read: tests/server/test_bodies.py.
    encoding=st.none() | st.just("identity"),
)
async def test_malformed_bodies_are_400_and_change_nothing(
    api: Api, raw: bytes, extra: dict[str, str], encoding: str | None
) -> None:
    if encoding is not None:
        extra["Content-Encoding"] = encoding
    status, body, _ = await api.call("POST", "/v1/tool-calls", raw=raw, headers=extra)
    assert status == 400, body
    await assert_untouched(api)


@SHARED
@given(
    authorization=HEADER_TEXT.filter(lambda h: CI not in h and OTHER not in h),
    body=st.sampled_from([{"tool": "deploy"}, {"tool": "read_file"}, {"tool": "drop_db"}]),
    path=st.sampled_from(["/v1/tool-calls", "/v1/tool-calls/x/cancel"]),
)
async def test_bad_credentials_are_401_and_change_nothing(
    api: Api, authorization: str, body: dict[str, Any], path: str
) -> None:
    status, _, _ = await api.call(
        "POST", path, body, token=None, headers={"Authorization": authorization}
    )
    assert status == 401
    await assert_untouched(api)


@SHARED
@given(
    document=st.fixed_dictionaries(
        {"tool": st.sampled_from(["deploy", "read_file", "x"]) | JSON},
        optional=dict.fromkeys(FIELDS[1:], JSON),
    )
    | JSON
)
async def test_arbitrary_json_bodies_are_never_a_5xx(api: Api, document: Any) -> None:
    status, body, _ = await api.call("POST", "/v1/tool-calls", document)
    assert status in (200, 201, 400), body


def test_only_an_unreachable_database_is_a_503() -> None:
    """A schema bug must stay a 500 in the log, not a 503 that clients retry for ever."""
    import sqlite3

    import sqlalchemy.exc

    from tapgate.server.api.middleware import _database_unavailable

    def wrapped(error: Exception, **kw: Any) -> sqlalchemy.exc.DBAPIError:
        return sqlalchemy.exc.OperationalError("SELECT 1", {}, error, **kw)

    assert _database_unavailable(ConnectionRefusedError(111, "Connect call failed"))
    assert _database_unavailable(OSError("Multiple exceptions: [Errno 111] Connect call failed"))
    assert _database_unavailable(wrapped(sqlite3.OperationalError("database is locked")))
    assert _database_unavailable(
        wrapped(sqlite3.OperationalError("server closed"), connection_invalidated=True)
    )
    assert not _database_unavailable(wrapped(sqlite3.OperationalError("no such table: x")))
    assert not _database_unavailable(OSError(28, "No space left on device"))
    assert not _database_unavailable(ValueError("a bug"))
