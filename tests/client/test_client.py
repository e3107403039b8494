"""The Python client: remote gates over HTTP and the ``guard`` tool wrapper.

HTTP behaviour (retries, long-poll slices, errors, timeouts) is pinned with
respx, which scripts the server's answers; then the same gates and guarded
tools run against the real server (``build_app`` on a real loopback port),
where an approver's decision comes from ``app[GATE].resolve`` as a webhook
would make it. No backoff sleeps: every gate here has ``backoff=0``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Literal

import aiohttp
import httpx
import pytest
import respx
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.client import (
    ArgumentsChanged,
    ClientError,
    Denied,
    GuardError,
    RemoteGate,
    SyncRemoteGate,
    ToolDenied,
    Unauthorized,
    guard,
)
from tapgate.client._plans import Pause, Planner, Send, resume, retry_after
from tapgate.config import parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.errors import AlreadyResolved, RequestNotFound
from tapgate.gate.models import Decision, ToolCall
from tapgate.server.app import build_app
from tapgate.server.keys import GATE
from tests.fakes import FakeLine
from tests.fakes.receivers import line_webhook
from tests.fakes.taps import signed_line_tap
from tests.server.test_api import CI, make_config

BASE = "http://tapgate.test"
DEPLOY = ToolCall(tool="deploy", arguments={"env": "prod"})


def state(decision: str = "pending", **fields: Any) -> dict[str, Any]:
    """A tool-call state as the server sends it."""
    decided = decision != "pending"
    body: dict[str, Any] = {
        "id": "req-1",
        "decision": decision,
        "status": {"allow": "approved", "deny": "denied"}.get(decision, "pending"),
        "reason": "deploys need a human",
        "decided_by": "alice" if decided else None,
        "source": "approver" if decided else None,
        "rule": "policy.rules[0]",
        "reused": False,
        "tool": "deploy",
        "session": None,
        "created_at": "2026-11-21T06:00:00.944345Z",
        "expires_at": "2026-11-21T06:10:00.944345Z",
        "resolved_at": None,
        "approvers": ["alice"],
    }
    return body | fields


def error(status: int, code: str, message: str, **extra: Any) -> httpx.Response:
    return httpx.Response(
        status, json={"error": {"code": code, "message": message, "path": None}, **extra}
    )


def remote(**options: Any) -> RemoteGate:
    """A gate without backoff nor outage window: scripted failures give up after ``retries``."""
    return RemoteGate(BASE, CI, **{"backoff": 0, "retry_for": 0, **options})


def sync_remote(**options: Any) -> SyncRemoteGate:
    return SyncRemoteGate(BASE, CI, **{"backoff": 0, "retry_for": 0, **options})


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


# -- RemoteGate over scripted HTTP -------------------------------------------------------


async def test_an_immediate_allow_needs_one_request_without_the_agent(
    api: respx.MockRouter,
) -> None:
    allowed = state("allow", id=None, status="allowed", source="policy", decided_by="rule")
    route = api.post("/v1/tool-calls").respond(200, json=allowed)
    call = ToolCall(tool="deploy", arguments={"env": "prod"}, agent="ignored", risk="write")
    decision = await remote().check(call)
    assert decision.allowed and decision.status == "allowed" and decision.request_id is None
    sent = route.calls.last.request
    assert sent.headers["Authorization"] == f"Bearer {CI}"
    assert json.loads(sent.content) == {
        "tool": "deploy",
        "arguments": {"env": "prod"},
        "risk": "write",
        "wait": 60,
    }


async def test_an_immediate_deny_carries_the_reason(api: respx.MockRouter) -> None:
    denied = state("deny", id=None, status="denied", source="policy", reason="no prod on Fridays")
    api.post("/v1/tool-calls").respond(200, json=denied)
    decision = await remote().check(DEPLOY)
    assert not decision.allowed and decision.reason == "no prod on Fridays"


async def test_check_long_polls_in_slices_until_approved(api: respx.MockRouter) -> None:
    api.post("/v1/tool-calls").respond(201, json=state())
    poll = api.get("/v1/tool-calls/req-1").mock(
        side_effect=[
            httpx.Response(200, json=state()),
            httpx.Response(200, json=state("allow", reason="approved by alice")),
        ]
    )
    # long_poll=0 makes every slice return "early", so this also walks the pause path.
    decision = await remote(long_poll=0).check(DEPLOY)
    assert decision.allowed and decision.decided_by == "alice" and decision.request_id == "req-1"
    assert poll.call_count == 2
    assert [c.request.url.params["wait"] for c in poll.calls] == ["0", "0"]


async def test_submit_returns_a_ticket_for_a_pending_request(api: respx.MockRouter) -> None:
    api.post("/v1/tool-calls").respond(200, json=state(reused=True))
    ticket = await remote().submit(DEPLOY)
    assert ticket.decision is None and ticket.request_id == "req-1" and ticket.reused
    assert ticket.request is not None and ticket.request.approvers == ("alice",)
    assert "wait" not in json.loads(api.calls.last.request.content)


async def test_a_401_raises_unauthorized_with_the_servers_message(
    api: respx.MockRouter,
) -> None:
    api.post("/v1/tool-calls").mock(return_value=error(401, "unauthorized", "invalid bearer token"))
    with pytest.raises(Unauthorized, match="invalid bearer token") as caught:
        await remote().check(DEPLOY)
    assert caught.value.status == 401 and caught.value.code == "unauthorized"
    assert isinstance(caught.value, ClientError)


async def test_a_400_is_a_client_error_and_is_not_retried(api: respx.MockRouter) -> None:
    route = api.post("/v1/tool-calls").mock(
        return_value=error(400, "invalid_body", "must be a finite number")
    )
    with pytest.raises(ClientError, match="must be a finite number") as caught:
        await remote().submit(DEPLOY)
    assert caught.value.code == "invalid_body" and route.call_count == 1


async def test_a_connection_error_is_retried_then_succeeds(api: respx.MockRouter) -> None:
    route = api.post("/v1/tool-calls").mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.Response(503, json={"error": {"code": "unavailable", "message": "retry"}}),
            httpx.Response(200, json=state("allow")),
        ]
    )
    assert (await remote().check(DEPLOY)).allowed
    assert route.call_count == 3


@pytest.mark.parametrize(
    "failure",
    [httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("closed"), httpx.Response(502)],
)
async def test_a_submit_that_may_have_acted_is_never_resent(
    api: respx.MockRouter, failure: Exception | httpx.Response
) -> None:
    """Its answer lost, the request may exist and be decided: asking again could undo a deny."""
    route = api.post("/v1/tool-calls").mock(
        side_effect=[failure, httpx.Response(200, json=state("allow"))]
    )
    if isinstance(failure, httpx.Response):
        with pytest.raises(ClientError):
            await remote().submit(DEPLOY)
    else:
        with pytest.raises(ClientError, match=type(failure).__name__) as caught:
            await remote().submit(DEPLOY)
        assert caught.value.code == "unreachable"
    assert route.call_count == 1


async def test_retries_give_up_with_an_unreachable_error(api: respx.MockRouter) -> None:
    route = api.get("/v1/tool-calls/req-1").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ClientError, match="refused") as caught:
        await remote(retries=2).wait("req-1")
    assert caught.value.code == "unreachable" and caught.value.status is None
    assert route.call_count == 3


async def test_a_503_from_a_proxy_is_retried(api: respx.MockRouter) -> None:
    route = api.get("/v1/tool-calls/req-1").mock(
        side_effect=[httpx.Response(503, text="busy"), httpx.Response(200, json=state("deny"))]
    )
    decision = await remote().wait("req-1", timeout=0)
    assert decision is not None and decision.verdict == "deny" and route.call_count == 2


async def test_the_async_gate_sleeps_through_the_injected_sleep(api: respx.MockRouter) -> None:
    """Backoff pauses go through ``sleep``: a Retry-After of 7 s costs the test nothing."""
    api.get("/v1/tool-calls/req-1").mock(
        side_effect=[
            httpx.Response(503, headers={"Retry-After": "7"}),
            httpx.Response(200, json=state("deny")),
        ]
    )
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)

    decision = await RemoteGate(BASE, CI, backoff=0.5, sleep=sleep).wait("req-1", timeout=0)
    assert decision is not None and decision.verdict == "deny"
    assert pauses == [7.0]


def test_the_sync_gate_sleeps_through_the_injected_sleep(api: respx.MockRouter) -> None:
    api.get("/v1/tool-calls/req-1").mock(
        side_effect=[
            httpx.Response(503, headers={"Retry-After": "7"}),
            httpx.Response(200, json=state("allow")),
        ]
    )
    pauses: list[float] = []
    with SyncRemoteGate(BASE, CI, backoff=0.5, sleep=pauses.append) as gate:
        decision = gate.wait("req-1", timeout=0)
    assert decision is not None and decision.verdict == "allow"
    assert pauses == [7.0]


@pytest.mark.parametrize(
    ("header", "low", "high"),
    [
        ("4", 4.0, 4.0),
        ("9999", 10.0, 10.0),  # capped: a proxy must not park an agent for hours
        ("soon", 0.25, 0.5),  # unreadable: the backoff alone
        ("\u00b2", 0.25, 0.5),  # a superscript two: str.isdigit says yes, float() says no
        (None, 0.25, 0.5),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.25, 0.5),  # a date in the past
    ],
)
def test_a_retry_waits_at_least_what_retry_after_asks(
    header: str | None, low: float, high: float
) -> None:
    """The plan's pause after a 503: the server's Retry-After as a floor under the backoff."""
    plan = Planner(timeout=1.0, retries=3, backoff=0.5, long_poll=60).wait("req-1", 0)
    step = resume(plan, None)
    assert isinstance(step, Send)
    headers = [] if header is None else [(b"Retry-After", header.encode("latin-1"))]
    pause = resume(plan, httpx.Response(503, headers=headers))
    assert isinstance(pause, Pause) and low <= pause.seconds <= high


def test_retry_after_reads_an_http_date() -> None:
    later = datetime.now(UTC) + timedelta(seconds=6)
    header = format_datetime(later, usegmt=True)
    assert 4.0 <= retry_after(httpx.Response(503, headers={"Retry-After": header})) <= 6.0


async def test_wait_honours_its_timeout_and_the_read_timeout_exceeds_the_wait(
    api: respx.MockRouter,
) -> None:
    route = api.get("/v1/tool-calls/req-1").respond(200, json=state())
    assert await remote(timeout=5).wait("req-1", timeout=0) is None
    assert route.call_count == 1
    assert route.calls.last.request.url.params["wait"] == "0"

    api.post("/v1/tool-calls").respond(200, json=state("allow"))
    await remote(timeout=5, long_poll=30).check(DEPLOY)
    read = api.calls.last.request.extensions["timeout"]["read"]
    assert read == 35


async def test_cancel_returns_the_denial_and_a_decided_one_is_already_resolved(
    api: respx.MockRouter,
) -> None:
    cancelled = state("deny", status="cancelled", source="cancel", decided_by="agent:ci-bot")
    route = api.post("/v1/tool-calls/req-1/cancel").mock(
        side_effect=[
            httpx.Response(200, json=cancelled),
            error(
                409, "already_decided", "the tool call is already cancelled", tool_call=cancelled
            ),
        ]
    )
    async with remote() as gate:
        decision = await gate.cancel("req-1", reason="changed my mind")
        assert decision.status == "cancelled" and not decision.allowed
        assert json.loads(route.calls.last.request.content) == {"reason": "changed my mind"}
        with pytest.raises(AlreadyResolved) as caught:
            await gate.cancel("req-1")
    assert caught.value.status == "cancelled" and caught.value.resolved_by == "agent:ci-bot"


async def test_a_cancel_that_may_have_arrived_is_not_resent(api: respx.MockRouter) -> None:
    route = api.post("/v1/tool-calls/req-1/cancel").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(ClientError, match="slow"):
        await remote().cancel("req-1")
    assert route.call_count == 1


async def test_an_unknown_id_raises_request_not_found(api: respx.MockRouter) -> None:
    api.get("/v1/tool-calls/nope").mock(return_value=error(404, "not_found", "no tool call"))
    with pytest.raises(RequestNotFound):
        await remote().wait("nope")


async def test_a_malformed_answer_is_a_client_error(api: respx.MockRouter) -> None:
    api.post("/v1/tool-calls").respond(200, json={"decision": "maybe"})
    with pytest.raises(ClientError) as caught:
        await remote().check(DEPLOY)
    assert caught.value.code == "bad_response"


# -- SyncRemoteGate over scripted HTTP ---------------------------------------------------


def test_sync_gate_long_polls_until_denied(api: respx.MockRouter) -> None:
    api.post("/v1/tool-calls").respond(201, json=state())
    api.get("/v1/tool-calls/req-1").mock(
        side_effect=[
            httpx.Response(200, json=state()),
            httpx.Response(200, json=state("deny", reason="not today")),
        ]
    )
    with sync_remote(long_poll=0) as gate:
        decision = gate.check(DEPLOY)
    assert not decision.allowed and decision.reason == "not today"


def test_sync_gate_retries_and_maps_errors(api: respx.MockRouter) -> None:
    route = api.post("/v1/tool-calls").mock(
        side_effect=[httpx.ConnectError("refused"), error(401, "unauthorized", "missing token")]
    )
    with sync_remote() as gate, pytest.raises(Unauthorized, match="missing token"):
        gate.submit(DEPLOY)
    assert route.call_count == 2


def test_sync_gate_wait_and_cancel(api: respx.MockRouter) -> None:
    api.get("/v1/tool-calls/req-1").respond(200, json=state())
    cancelled = state("deny", status="cancelled", source="cancel", decided_by="agent:ci-bot")
    api.post("/v1/tool-calls/req-1/cancel").respond(200, json=cancelled)
    with sync_remote() as gate:
        assert gate.wait("req-1", timeout=0) is None
        assert gate.cancel("req-1").source == "cancel"


# -- guard without a server ---------------------------------------------------------------


@dataclass
class FakeGate:
    """A gate that answers from a script and records the calls it saw."""

    verdict: str = "allow"
    seen: list[ToolCall] | None = None

    async def check(self, call: ToolCall) -> Decision:
        self.seen = [*(self.seen or []), call]
        return Decision(
            verdict="allow" if self.verdict == "allow" else "deny",
            status="allowed" if self.verdict == "allow" else "denied",
            source="policy",
            decided_by="test",
            reason=f"{self.verdict} by the script",
        )


def test_guard_binds_arguments_and_keeps_metadata() -> None:
    gate = FakeGate()

    @guard(gate, tool="files.write", risk="write", session="s1", agent="me")
    def write(path: Path, text: str, *, mode: str = "w") -> int:
        """Write a file."""
        return len(text)

    assert write(Path("/tmp/x"), "hi") == 2
    assert write.__name__ == "write" and write.__doc__ == "Write a file."
    assert gate.seen == [
        ToolCall(
            tool="files.write",
            arguments={"path": "/tmp/x", "text": "hi", "mode": "w"},
            agent="me",
            session="s1",
            risk="write",
        )
    ]


async def test_a_sync_tool_with_an_async_gate_refuses_inside_a_running_loop() -> None:
    @guard(FakeGate())
    def tool() -> None:
        raise AssertionError("must not run")

    with pytest.raises(GuardError, match="SyncRemoteGate"):
        tool()


def test_guard_on_a_method_leaves_self_out() -> None:
    gate = FakeGate(verdict="deny")

    class Db:
        @guard(gate, on_deny="return")
        def drop(self, name: str) -> str:
            return name

    result = Db().drop("prod")
    assert isinstance(result, Denied) and result.reason == "deny by the script"
    assert gate.seen is not None and gate.seen[0].arguments == {"name": "prod"}


# -- against the real server --------------------------------------------------------------


@dataclass
class Served:
    app: web.Application
    url: str

    async def pending(self) -> str:
        """The id of the one pending request, once the client has created it."""
        for _ in range(5000):
            found = await self.app[GATE].store.list_requests(status="pending")
            if found:
                return found[0].id
            await asyncio.sleep(0.002)
        raise AssertionError("no pending request appeared")

    async def decide(self, verdict: Literal["approve", "deny"], reason: str | None = None) -> None:
        request_id = await self.pending()
        await self.app[GATE].resolve(request_id, verdict, by="alice", reason=reason)


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    config = make_config(migrated_sqlite_url)
    app = build_app(config, notifiers=[RecordingNotifier("console")])
    async with TestServer(app, host="127.0.0.1") as server:
        yield Served(app=app, url=str(server.make_url("")))


async def test_a_guarded_async_tool_is_approved_then_runs(served: Served) -> None:
    ran: list[str] = []
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:

        @guard(gate)
        async def deploy(env: str) -> str:
            ran.append(env)
            return f"deployed {env}"

        task = asyncio.create_task(deploy("prod"))
        await served.decide("approve")
        assert await task == "deployed prod"
    assert ran == ["prod"]


async def test_a_guarded_async_tool_is_denied_with_the_reason(served: Served) -> None:
    @guard(RemoteGate(served.url, CI))
    async def deploy(env: str) -> str:
        raise AssertionError("must not run")

    task = asyncio.create_task(deploy("prod"))
    await served.decide("deny", reason="not during the freeze")
    with pytest.raises(ToolDenied, match="not during the freeze") as caught:
        await task
    assert caught.value.decision.source == "approver" and caught.value.tool == "deploy"


async def test_a_guarded_tool_whose_arguments_change_while_waiting_does_not_run(
    served: Served,
) -> None:
    """Approved for staging, mutated to prod during the wait: the tool must not run on prod."""
    ran: list[dict[str, str]] = []
    async with RemoteGate(served.url, CI, long_poll=0.2) as gate:

        @guard(gate)
        async def deploy(target: dict[str, str]) -> None:
            ran.append(dict(target))

        target = {"env": "staging"}
        task = asyncio.create_task(deploy(target))
        await served.pending()
        target["env"] = "prod"
        await served.decide("approve")
        with pytest.raises(ArgumentsChanged, match="changed while the call was being decided"):
            await task
        assert isinstance(task.exception(), GuardError)

    with SyncRemoteGate(served.url, CI, long_poll=0.2) as sync_gate:

        @guard(sync_gate, on_deny="return")
        def sync_deploy(target: dict[str, str]) -> None:
            ran.append(dict(target))

        target = {"env": "staging"}
        thread = asyncio.create_task(asyncio.to_thread(sync_deploy, target))
        await served.pending()
        target["env"] = "prod"
        await served.decide("approve")
        with pytest.raises(ArgumentsChanged):  # not a Denied value: nobody denied anything
            await thread
    assert ran == []


async def test_a_guarded_sync_tool_in_a_thread_is_approved_and_denied(served: Served) -> None:
    with SyncRemoteGate(served.url, CI, long_poll=0.2) as gate:

        @guard(gate, on_deny="return")
        def deploy(env: str) -> str:
            return f"deployed {env}"

        task = asyncio.create_task(asyncio.to_thread(deploy, "staging"))
        await served.decide("approve")
        assert await task == "deployed staging"

        task = asyncio.create_task(asyncio.to_thread(deploy, "prod"))
        await served.decide("deny", reason="prod is frozen")
        denied = await task
    assert isinstance(denied, Denied) and denied.reason == "prod is frozen"
    assert denied.decision.request_id is not None


async def test_a_sync_tool_with_an_async_remote_gate_runs_its_own_loop(served: Served) -> None:
    @guard(RemoteGate(served.url, CI))
    def read_file(path: str) -> str:
        return f"read {path}"

    assert await asyncio.to_thread(read_file, "a") == "read a"
    assert await asyncio.to_thread(read_file, "b") == "read b"  # a second, fresh event loop


async def test_allowed_by_policy_runs_at_once_and_denied_by_policy_never(served: Served) -> None:
    gate = RemoteGate(served.url, CI)

    @guard(gate)
    async def read_file(path: str) -> str:
        return f"read {path}"

    @guard(gate, on_deny="return")
    async def drop_db(name: str) -> str:
        raise AssertionError("must not run")

    assert await read_file("README.md") == "read README.md"
    denied = await drop_db("prod")
    assert isinstance(denied, Denied) and "destructive" in denied.reason
    assert await served.app[GATE].store.list_requests() == []


async def test_a_wrong_token_is_unauthorized_against_the_real_server(served: Served) -> None:
    with pytest.raises(Unauthorized, match="invalid bearer token"):
        await RemoteGate(served.url, "wrong-token-0123456789").check(DEPLOY)


async def test_remote_submit_wait_and_cancel_against_the_real_server(served: Served) -> None:
    async with RemoteGate(served.url, CI) as gate:
        ticket = await gate.submit(DEPLOY)
        assert ticket.request_id is not None and ticket.request is not None
        assert ticket.request.approvers == ("alice", "bob")
        assert await gate.wait(ticket.request_id, timeout=0.05) is None
        assert (await gate.submit(DEPLOY)).reused
        decision = await gate.cancel(ticket.request_id, reason="no longer needed")
        assert decision.status == "cancelled" and decision.reason == "no longer needed"
        with pytest.raises(AlreadyResolved):
            await gate.cancel(ticket.request_id)
        with pytest.raises(RequestNotFound):
            await gate.wait("no-such-id")


async def test_the_in_process_gate_works_with_guard(served: Served) -> None:
    gate = served.app[GATE]

    @guard(gate, agent="ci-bot")
    async def deploy(env: str) -> str:
        return f"deployed {env}"

    @guard(gate, agent="ci-bot", risk="read_only")
    async def read_file(path: str) -> str:
        return path

    assert await read_file("x") == "x"
    task = asyncio.create_task(deploy("prod"))
    await served.decide("deny", reason="use the pipeline")
    with pytest.raises(ToolDenied, match="use the pipeline"):
        await task


class _Client:
    """An object whose text is its address: a copy of it reads differently."""


@dataclass
class _Job:
    env: str
    client: _Client
    retries: float = float("nan")


class _FreshNaN(Mapping[str, float]):
    """A mapping that computes a new NaN on every read."""

    def __getitem__(self, key: str) -> float:
        return float("nan")

    def __iter__(self) -> Iterator[str]:
        return iter(["x"])

    def __len__(self) -> int:
        return 1


class _LockingGate(FakeGate):
    """Allows, but takes the lock it was handed while deciding (its text changes)."""

    lock: threading.Lock | None = None

    async def check(self, call: ToolCall) -> Decision:
        assert self.lock is not None
        self.lock.acquire()
        return await super().check(call)


async def test_guard_runs_an_allowed_tool_whose_arguments_only_read_differently() -> None:
    """No false ArgumentsChanged: objects by identity, NaN equal to NaN, values rebuilt alike."""
    ran: list[str] = []

    @guard(FakeGate())
    async def deploy(job: _Job, limits: Mapping[str, float], ratio: float) -> None:
        ran.append(job.env)

    await deploy(_Job("staging", _Client()), _FreshNaN(), float("nan"))
    lock = threading.Lock()
    gate = _LockingGate()
    gate.lock = lock

    @guard(gate)
    async def with_lock(lock: threading.Lock) -> None:
        ran.append("locked")

    await with_lock(lock)
    assert ran == ["staging", "locked"]


async def test_guard_refuses_a_value_that_changed_type_or_content() -> None:
    flags: dict[str, Any] = {"force": 1}
    job = _Job("staging", _Client())

    class Mutating(FakeGate):
        async def check(self, call: ToolCall) -> Decision:
            flags["force"] = True  # 1 == True, but not what was shown
            job.env = "prod"
            return await super().check(call)

    @guard(Mutating())
    async def deploy(job: _Job, flags: dict[str, Any]) -> None:
        raise AssertionError("must not run")

    with pytest.raises(ArgumentsChanged):
        await deploy(job, flags)


def test_guard_wrapper_is_a_functools_wrapper() -> None:
    def tool(x: int) -> int:
        return x

    wrapped = guard(FakeGate())(tool)
    assert wrapped.__wrapped__ is tool  # type: ignore[attr-defined]
    assert wrapped(3) == 3  # a sync tool, an async gate, no running loop: asyncio.run


# -- decided by a signed LINE tap, through the real webhook ---------------------------------

LINE_SECRET = "client-test-line-secret"
LINE_TOKEN = "client-test-line-token"
ALICE_LINE = "U" + "c3" * 16


@dataclass
class Tapped:
    """The real app with a LINE channel, the fake LINE API, and a way to tap."""

    app: web.Application
    url: str
    line: FakeLine
    session: aiohttp.ClientSession

    async def tap(self, action: str) -> str:
        """Wait for the one pending request, then tap ``action`` on it as alice does on LINE."""
        request_id = await Served(self.app, self.url).pending()
        body, headers = signed_line_tap(LINE_SECRET, ALICE_LINE, request_id, action)
        async with self.session.post(
            self.url.rstrip("/") + "/webhooks/line", data=body, headers=headers
        ) as response:
            assert response.status == 200
        await line_webhook(self.app).settled()
        return request_id


@pytest.fixture
async def tapped(migrated_sqlite_url: str) -> AsyncIterator[Tapped]:
    async with FakeLine(access_token=LINE_TOKEN) as line:
        secrets = {"channel_access_token": LINE_TOKEN, "channel_secret": LINE_SECRET}
        config = parse_config(
            {
                "server": {"heartbeat_interval": 3600},
                "store": {"url": migrated_sqlite_url},
                "agents": [{"name": "ci-bot", "token": CI}],
                "approvers": [{"name": "alice", "line": ALICE_LINE}],
                "channels": {"line": {**secrets, "api_base_url": line.url}},
                "policy": {"rules": [{"tool": "deploy", "action": "ask", "approvers": ["alice"]}]},
            }
        )
        app = build_app(config, notifiers=[RecordingNotifier("line")])
        async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as s:
            yield Tapped(app=app, url=str(server.make_url("")), line=line, session=s)


async def test_an_async_tool_approved_and_denied_by_signed_line_taps(tapped: Tapped) -> None:
    ran: list[str] = []
    async with RemoteGate(tapped.url, CI, long_poll=0.2) as gate:

        @guard(gate)
        async def deploy(env: str) -> str:
            ran.append(env)
            return f"deployed {env}"

        task = asyncio.create_task(deploy("staging"))
        await tapped.tap("approve")
        assert await asyncio.wait_for(task, 10) == "deployed staging"

        task = asyncio.create_task(deploy("prod"))
        await tapped.tap("deny")
        with pytest.raises(ToolDenied) as caught:
            await asyncio.wait_for(task, 10)
    assert ran == ["staging"]
    decision = caught.value.decision
    assert (decision.status, decision.source, decision.decided_by) == (
        "denied",
        "approver",
        "alice",
    )
    assert "alice" in caught.value.reason
    replies = [reply.messages[0]["text"] for reply in tapped.line.replies]
    assert replies[0].startswith("Approved") and replies[1].startswith("Denied")


async def test_a_sync_tool_approved_and_denied_by_signed_line_taps(tapped: Tapped) -> None:
    with SyncRemoteGate(tapped.url, CI, long_poll=0.2) as gate:

        @guard(gate, on_deny="return")
        def deploy(env: str) -> str:
            return f"deployed {env}"

        task = asyncio.create_task(asyncio.to_thread(deploy, "staging"))
        await tapped.tap("approve")
        assert await asyncio.wait_for(task, 10) == "deployed staging"

        task = asyncio.create_task(asyncio.to_thread(deploy, "prod"))
        request_id = await tapped.tap("deny")
        denied = await asyncio.wait_for(task, 10)
    assert isinstance(denied, Denied)
    assert (denied.decision.request_id, denied.decision.decided_by) == (request_id, "alice")


def test_decide_withdraws_a_request_it_can_no_longer_wait_for(api: respx.MockRouter) -> None:
    """A wait that fails (here a 400 from a server whose max_wait is too short) cancels."""
    from tapgate.client._ask import decide

    api.post("/v1/tool-calls").respond(200, json=state())
    api.get("/v1/tool-calls/req-1").mock(
        return_value=error(400, "invalid_query", "must be at most 30 (server.max_wait)")
    )
    cancelled = state("deny", status="cancelled", source="cancel", decided_by="agent:ci-bot")
    cancel = api.post("/v1/tool-calls/req-1/cancel").respond(200, json=cancelled)
    with sync_remote() as gate, pytest.raises(ClientError, match="max_wait"):
        decide(gate, DEPLOY, timeout=None)
    assert cancel.call_count == 1


def test_reprs_show_neither_the_token_nor_url_credentials() -> None:
    for gate in (
        RemoteGate("https://ops:hunter2@tapgate.example:8443", CI),
        SyncRemoteGate("https://ops:hunter2@tapgate.example:8443", CI),
    ):
        text = repr(gate)
        assert "tapgate.example:8443" in text
        assert "hunter2" not in text and "ops" not in text and CI not in text
