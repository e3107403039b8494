"""The HumanLayer-compatible API, driven by the real ``humanlayer`` SDK against the real server.

``build_app`` serves on a loopback port; the unmodified SDK (sync ``HumanLayer``
in a thread, ``AsyncHumanLayer`` on the test's loop) talks to it with an
agent's token as its API key. Approvers decide with signed LINE taps posted to
``/webhooks/line`` or through ``app[GATE].resolve`` (what the Reply button and
the operator's CLI do). The SDK polls with ``sleep(3)`` between requests; its
``sleep`` constructor field (public, documented) is set to a 10 ms nap here,
so no test waits on the SDK's interval. Time on the server is a
``ManualClock``: expiry is a clock advance, not a wait.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from humanlayer import AsyncHumanLayer, FunctionCallStatus, HumanContactStatus, HumanLayer
from humanlayer.core.models import FunctionCall, HumanContact
from humanlayer.core.protocol import HumanLayerException
from sqlalchemy.exc import IntegrityError

from tapgate.config import Config, parse_config
from tapgate.decisions.buttons import answer_prefill
from tapgate.decisions.edits import approve_edit
from tapgate.decisions.taps import Tap
from tapgate.delivery.recording import RecordingNotifier
from tapgate.gate.clock import ManualClock
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Decision, Request
from tapgate.server.api.humanlayer import PREFIX
from tapgate.server.api.models import ErrorOut
from tapgate.server.app import build_app
from tapgate.server.keys import GATE, STORE
from tapgate.store import Store
from tapgate.store.calls import ClientCall
from tests.fakes import FakeLine
from tests.fakes.receivers import line_webhook
from tests.fakes.taps import signed_line_tap, signed_line_text

CI = "ci-agent-token-0123456789abcdef"
OTHER = "other-agent-token-0123456789abc"
MUTE = "mute-agent-token-0123456789abcd"
SECRET = "test-line-channel-secret"
LINE_TOKEN = "line-test-channel-access-token"
ALICE = "U" + "a1" * 16
BOB = "U" + "b2" * 16
RUN = "run-e2e"


def make_config(line_url: str, db_url: str) -> Config:
    return parse_config(
        {
            "server": {"heartbeat_interval": 3600},  # expiry here comes from reads, not sweeps
            "store": {"url": db_url},
            "agents": [
                {"name": "ci", "token": CI},
                {"name": "other", "token": OTHER},
                {"name": "mute", "token": MUTE},
            ],
            "approvers": [{"name": "alice", "line": ALICE}, {"name": "bob", "line": BOB}],
            "channels": {
                "console": {"enabled": False},
                "line": {
                    "channel_access_token": LINE_TOKEN,
                    "channel_secret": SECRET,
                    "api_base_url": line_url,
                    "timeout": 5,
                },
            },
            "policy": {
                "rules": [
                    {
                        "tool": "deploy",
                        "action": "ask",
                        "approvers": ["alice", "bob"],
                        "timeout": 60,
                    },
                    {"tool": "read_file", "action": "allow", "reason": "reading is harmless"},
                    {"tool": "drop_db", "action": "deny", "reason": "agents never drop databases"},
                    {"tool": CONTACT_TOOL, "action": "ask", "approvers": ["alice"], "timeout": 300},
                ],
                "agents": {
                    "other": {"rules": [{"tool": CONTACT_TOOL, "action": "allow"}]},
                    "mute": {"rules": [{"tool": CONTACT_TOOL, "action": "deny"}]},
                },
            },
        },
        env={},
    )


@dataclass
class Served:
    """The real app on a loopback port, the fake LINE API, the clock and an HTTP session."""

    app: web.Application
    url: str
    line: FakeLine
    clock: ManualClock
    session: aiohttp.ClientSession

    @property
    def gate(self) -> Gate:
        return self.app[GATE]

    @property
    def store(self) -> Store:
        return self.app[STORE]

    @property
    def base(self) -> str:
        return self.url + PREFIX

    def sdk(self, token: str = CI, run_id: str = RUN) -> HumanLayer:
        return HumanLayer(
            api_key=token,
            api_base_url=self.base,
            run_id=run_id,
            sleep=lambda _seconds: time.sleep(0.01),
        )

    def async_sdk(self, token: str = CI, run_id: str = RUN) -> AsyncHumanLayer:
        return AsyncHumanLayer(
            api_key=token,
            api_base_url=self.base,
            run_id=run_id,
            sleep=lambda _seconds: asyncio.sleep(0.01),
        )

    async def pending(self, tool: str) -> Request:
        """The pending request the SDK's call created, once it exists."""
        for _ in range(2000):
            for found in await self.store.list_requests(status="pending"):
                if found.tool == tool:
                    return found
            await asyncio.sleep(0.005)
        raise AssertionError(f"no pending request for {tool}")

    async def tap(self, user: str, request: Request, action: str) -> None:
        body, headers = signed_line_tap(SECRET, user, request.id, action)
        async with self.session.post(self.url + "/webhooks/line", data=body, headers=headers) as r:
            assert r.status == 200
        await line_webhook(self.app).settled()

    async def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = CI, raw: bytes = b""
    ) -> tuple[int, dict[str, Any]]:
        """One raw request; every answer must be JSON, and every error tapgate's error shape."""
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        data = io.BytesIO(json.dumps(body).encode() if body is not None else raw)
        async with self.session.request(method, self.base + path, data=data, headers=headers) as r:
            text = await r.text()
        assert r.content_type == "application/json", (r.status, text)
        if r.status >= 400:
            ErrorOut.model_validate_json(text)
        return r.status, json.loads(text)


@asynccontextmanager
async def serve(db_url: str, clock: ManualClock, line: FakeLine) -> AsyncIterator[Served]:
    app = build_app(
        make_config(line.url, db_url), clock=clock, notifiers=[RecordingNotifier("line")]
    )
    async with (
        TestServer(app, host="127.0.0.1") as server,
        aiohttp.ClientSession() as session,
    ):
        yield Served(app, str(server.make_url("")).rstrip("/"), line, clock, session)


@pytest.fixture
async def line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=LINE_TOKEN) as fake:
        yield fake


@pytest.fixture
async def served(
    migrated_sqlite_url: str, clock: ManualClock, line: FakeLine
) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, clock, line) as s:
        yield s


def function_call(call_id: str = "call-1", fn: str = "deploy", **kwargs: Any) -> dict[str, Any]:
    """A create body exactly as the SDK's ``FunctionCall.model_dump()`` sends it."""
    spec = {"fn": fn, "kwargs": kwargs, "channel": None, "reject_options": None, "state": None}
    return {"run_id": RUN, "call_id": call_id, "spec": spec, "status": None}


def contact(call_id: str = "call-c", msg: str = "Which region?") -> dict[str, Any]:
    spec = {"msg": msg, "subject": None, "channel": None, "response_options": None, "state": None}
    return {"run_id": RUN, "call_id": call_id, "spec": spec, "status": None}


# -- require_approval ---------------------------------------------------------------------


async def test_require_approval_runs_after_a_signed_line_tap(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Configured the documented way: environment variables only.
    monkeypatch.setenv("HUMANLAYER_API_BASE", served.base)
    monkeypatch.setenv("HUMANLAYER_API_KEY", CI)
    monkeypatch.setenv("HUMANLAYER_RUN_ID", RUN)
    hl = HumanLayer(sleep=lambda _seconds: time.sleep(0.01))

    @hl.require_approval()
    def deploy(env: str) -> str:
        return f"deployed {env}"

    task = asyncio.create_task(asyncio.to_thread(deploy, env="prod"))
    request = await served.pending("deploy")
    assert (request.agent, request.session, dict(request.arguments)) == ("ci", RUN, {"env": "prod"})
    assert request.approvers == ("alice", "bob")
    await served.tap(ALICE, request, "approve")
    assert await asyncio.wait_for(task, 10) == "deployed prod"
    assert served.line.replies  # the tapper was told, as for any request


async def test_a_denying_tap_gives_the_sdk_a_default_comment(served: Served) -> None:
    @served.sdk().require_approval()
    def deploy(env: str) -> str:
        raise AssertionError("must not run")

    task = asyncio.create_task(asyncio.to_thread(deploy, env="prod"))
    await served.tap(BOB, await served.pending("deploy"), "deny")
    assert await asyncio.wait_for(task, 10) == "User denied deploy with message: denied by bob"


async def test_an_approvers_reason_is_the_denial_comment(served: Served) -> None:
    hl = served.sdk()
    task = asyncio.create_task(asyncio.to_thread(hl.create_function_call, spec_of("deploy")))
    created: FunctionCall = await task
    assert created.status is not None and created.status.approved is None
    request = await served.pending("deploy")
    assert created.status.requested_at == request.created_at
    served.clock.advance(5)
    await served.gate.resolve(request.id, "deny", by="alice", reason="not during the freeze")
    done = await asyncio.to_thread(hl.get_function_call, created.call_id)
    assert done.status is not None
    assert (done.status.approved, done.status.comment) == (False, "not during the freeze")
    assert done.status.responded_at == served.clock.now()
    assert done.spec.fn == "deploy" and done.run_id == RUN


def spec_of(fn: str, **kwargs: Any) -> Any:
    from humanlayer import FunctionCallSpec

    return FunctionCallSpec(fn=fn, kwargs=kwargs or {"env": "prod"})


async def test_async_require_approval_is_approved_and_denied(served: Served) -> None:
    hl = served.async_sdk()
    ran: list[str] = []

    @hl.require_approval()
    async def deploy(env: str) -> str:
        ran.append(env)
        return f"deployed {env}"

    task = asyncio.ensure_future(deploy(env="staging"))  # the SDK types it an Awaitable
    await served.gate.resolve((await served.pending("deploy")).id, "approve", by="alice")
    assert await asyncio.wait_for(task, 10) == "deployed staging"

    task = asyncio.ensure_future(deploy(env="prod"))
    request = await served.pending("deploy")
    await served.gate.resolve(request.id, "deny", by="bob", reason="prod is frozen")
    assert await asyncio.wait_for(task, 10) == "User denied deploy with message: prod is frozen"
    assert ran == ["staging"]


async def test_a_policy_allowed_call_runs_without_a_human(served: Served) -> None:
    @served.sdk().require_approval()
    def read_file(path: str) -> str:
        return f"read {path}"

    assert await asyncio.to_thread(read_file, path="README.md") == "read README.md"
    assert await served.store.list_requests() == []
    status, body = await served.call("GET", "/function_calls/" + await only_call_id(served))
    assert status == 200
    assert (body["status"]["approved"], body["status"]["comment"]) == (True, "reading is harmless")


async def only_call_id(served: Served) -> str:
    query = "SELECT call_id FROM client_calls"
    return str(await served.store.run(lambda c: c.exec_driver_sql(query).scalar_one()))


async def test_a_policy_denied_call_is_refused_with_the_policy_reason(served: Served) -> None:
    @served.async_sdk().require_approval()
    async def drop_db(name: str) -> str:
        raise AssertionError("must not run")

    result = await drop_db(name="prod")
    assert result == "User denied drop_db with message: agents never drop databases"
    assert await served.store.list_requests() == []


async def test_an_expired_call_is_denied_with_a_clear_comment(served: Served) -> None:
    hl = served.sdk()

    @hl.require_approval()
    def deploy(env: str) -> str:
        raise AssertionError("must not run")

    task = asyncio.create_task(asyncio.to_thread(deploy, env="prod"))
    request = await served.pending("deploy")
    served.clock.advance(61)  # no heartbeat has run: the SDK's next poll expires it
    expected = "User denied deploy with message: expired: no decision within 60s (on_timeout: deny)"
    assert await asyncio.wait_for(task, 10) == expected
    assert (await served.gate.get_request(request.id)).status == "expired"


async def test_allow_for_session_covers_the_rest_of_the_run(served: Served) -> None:
    hl = served.sdk()

    @hl.require_approval()
    def deploy(env: str) -> str:
        return f"deployed {env}"

    task = asyncio.create_task(asyncio.to_thread(deploy, env="prod"))
    await served.tap(ALICE, await served.pending("deploy"), "approve_session")
    assert await asyncio.wait_for(task, 10) == "deployed prod"
    # The same run (session = run_id) needs nobody now; another run asks again.
    assert await asyncio.to_thread(deploy, env="prod") == "deployed prod"
    assert len(await served.store.list_requests()) == 1

    @served.sdk(run_id="run-2").require_approval()  # type: ignore[no-redef]  # the SDK's tool name
    def deploy(env: str) -> str:  # the same tool, in another HumanLayer run
        raise AssertionError("must not run")

    task = asyncio.create_task(asyncio.to_thread(deploy, env="prod"))
    request = await served.pending("deploy")
    assert request.session == "run-2"
    await served.gate.resolve(request.id, "deny", by="alice")
    assert await asyncio.wait_for(task, 10) == "User denied deploy with message: denied by alice"


# -- human_as_tool ------------------------------------------------------------------------


class AskHuman(Protocol):
    """The function ``HumanLayer.human_as_tool()`` returns (the SDK annotates ``[str] -> str``)."""

    def __call__(self, message: str, subject: str | None = None) -> str: ...


class AsyncAskHuman(Protocol):
    """The coroutine function ``AsyncHumanLayer.human_as_tool()`` returns."""

    def __call__(self, message: str, subject: str | None = None) -> Coroutine[Any, Any, str]: ...


async def test_human_as_tool_returns_the_approvers_answer(served: Served) -> None:
    ask = cast(AskHuman, served.sdk().human_as_tool())
    task = asyncio.create_task(asyncio.to_thread(ask, message="Which region?"))
    request = await served.pending(CONTACT_TOOL)
    assert dict(request.arguments) == {"message": "Which region?"}
    assert (request.agent, request.session, request.approvers) == ("ci", RUN, ("alice",))
    await served.gate.resolve(request.id, "approve", by="alice", reason="eu-west-1, as usual")
    assert await asyncio.wait_for(task, 10) == "eu-west-1, as usual"


async def test_human_as_tool_answered_by_typing_on_line(served: Served) -> None:
    """The whole path: the Reply button's prefill, typed and sent as a signed LINE text."""
    ask = cast(AskHuman, served.sdk().human_as_tool())
    task = asyncio.create_task(asyncio.to_thread(ask, message="Which region?"))
    request = await served.pending(CONTACT_TOOL)
    typed = answer_prefill(request.id) + "eu-west-1, as usual"
    body, headers = signed_line_text(SECRET, ALICE, typed)
    async with served.session.post(
        served.url + "/webhooks/line", data=body, headers=headers
    ) as response:
        assert response.status == 200
    assert await asyncio.wait_for(task, 10) == "eu-west-1, as usual"
    await line_webhook(served.app).settled()
    assert served.line.replies[-1].messages[0]["text"].startswith("Answer sent")
    # Bob is not an approver of this question: his typed answer changes nothing.
    second = asyncio.create_task(asyncio.to_thread(ask, message="And the size?"))
    request = await served.pending(CONTACT_TOOL)
    body, headers = signed_line_text(SECRET, BOB, answer_prefill(request.id) + "xl")
    async with served.session.post(
        served.url + "/webhooks/line", data=body, headers=headers
    ) as response:
        assert response.status == 200
    await line_webhook(served.app).settled()
    assert (await served.gate.get_request(request.id)).status == "pending"
    await served.gate.resolve(request.id, "approve", by="alice", reason="m")
    assert await asyncio.wait_for(second, 10) == "m"


async def test_async_human_as_tool_with_a_subject(served: Served) -> None:
    ask = cast(AsyncAskHuman, served.async_sdk().human_as_tool())
    task = asyncio.create_task(ask(message="Ship it?", subject="release 1.2"))
    request = await served.pending(CONTACT_TOOL)
    assert dict(request.arguments) == {"message": "Ship it?", "subject": "release 1.2"}
    await served.gate.resolve(request.id, "approve", by="alice", reason="yes")
    assert await asyncio.wait_for(task, 10) == "yes"


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("deny", "No answer from a human: alice dismissed the question."),
        (
            "deny:out of scope",
            "No answer from a human: alice dismissed the question: out of scope.",
        ),
        ("approve", "alice acknowledged the message without an answer."),
        ("expire", "No answer from a human: nobody answered within 300s."),
        ("cancel", "No answer from a human: the question was withdrawn by operator."),
    ],
)
async def test_a_contact_without_an_answer_still_ends_the_sdks_wait(
    served: Served, outcome: str, expected: str
) -> None:
    ask = cast(AskHuman, served.sdk().human_as_tool())
    task = asyncio.create_task(asyncio.to_thread(ask, message="Which region?"))
    request = await served.pending(CONTACT_TOOL)
    verdict, _, reason = outcome.partition(":")
    match verdict:
        case "expire":
            served.clock.advance(301)
        case "cancel":
            await served.gate.cancel(request.id, by="operator")
        case "approve" | "deny":
            await served.gate.resolve(request.id, verdict, by="alice", reason=reason or None)
        case _:
            raise AssertionError(f"unknown outcome {outcome!r}")
    assert await asyncio.wait_for(task, 10) == expected


@pytest.mark.parametrize(
    ("token", "status", "code", "verdict"),
    [(OTHER, 409, "contact_not_routed", "allowed"), (MUTE, 403, "contact_denied", "denied")],
)
async def test_a_contact_policy_that_asks_nobody_is_an_error(
    served: Served, token: str, status: int, code: str, verdict: str
) -> None:
    ask = cast(AskHuman, served.sdk(token=token).human_as_tool())
    with pytest.raises(HumanLayerException, match=code):
        await asyncio.to_thread(ask, message="Anyone there?")
    answer, body = await served.call("POST", "/contact_requests", contact(), token=token)
    assert (answer, body["error"]["code"]) == (status, code)
    assert f"was {verdict} without asking anyone" in body["error"]["message"]
    assert "action: ask" in body["error"]["message"]
    assert await served.store.list_requests() == []
    assert (await served.call("GET", "/contact_requests/call-c", token=token))[0] == 404


# -- idempotency, ownership, restarts -----------------------------------------------------


async def test_creating_a_call_id_again_returns_it_and_another_spec_conflicts(
    served: Served,
) -> None:
    status, first = await served.call("POST", "/function_calls", function_call(env="prod"))
    assert status == 201 and first["status"]["approved"] is None
    status, again = await served.call("POST", "/function_calls", function_call(env="prod"))
    assert (status, again) == (200, first)
    assert len(await served.store.list_requests()) == 1
    status, body = await served.call("POST", "/function_calls", function_call(env="dev"))
    assert (status, body["error"]["code"]) == (409, "call_id_conflict")
    status, body = await served.call("POST", "/contact_requests", contact(call_id="call-1"))
    assert (status, body["error"]["code"]) == (409, "call_id_conflict")
    assert "already names a function call" in body["error"]["message"]
    assert (await served.call("GET", "/contact_requests/call-1"))[0] == 404
    assert len(await served.store.list_requests()) == 1


async def test_concurrent_creates_of_one_call_id_make_one_request(served: Served) -> None:
    bodies = [function_call(call_id="call-race", env="prod")] * 8
    answers = await asyncio.gather(*(served.call("POST", "/function_calls", b) for b in bodies))
    assert {status for status, _ in answers} <= {200, 201}
    assert len({json.dumps(body, sort_keys=True) for _, body in answers}) == 1
    assert len(await served.store.list_requests()) == 1


async def test_another_agents_call_is_not_found(served: Served) -> None:
    assert (await served.call("POST", "/function_calls", function_call()))[0] == 201
    assert (await served.call("POST", "/contact_requests", contact()))[0] == 201
    for path in ("/function_calls/call-1", "/contact_requests/call-c"):
        status, body = await served.call("GET", path, token=OTHER)
        assert (status, body["error"]["code"]) == (404, "not_found")
    with pytest.raises(HumanLayerException, match="404"):
        await asyncio.to_thread(served.sdk(token=OTHER).get_function_call, "call-1")


async def test_a_call_id_with_a_nul_is_not_found(
    db_url: str, clock: ManualClock, line: FakeLine
) -> None:
    """PostgreSQL cannot compare text holding NUL: looked up as it came, it was a 500."""
    async with serve(db_url, clock, line) as served:
        assert (await served.call("POST", "/function_calls", function_call()))[0] == 201
        for path in ("/function_calls/call-1%00", "/contact_requests/%00"):
            status, body = await served.call("GET", path)
            assert (status, body["error"]["code"]) == (404, "not_found"), body


async def test_answers_survive_a_restart(db_url: str, clock: ManualClock, line: FakeLine) -> None:
    async with serve(db_url, clock, line) as first:
        assert (await first.call("POST", "/function_calls", function_call()))[0] == 201
        allowed = function_call(call_id="call-read", fn="read_file", path="a")
        assert (await first.call("POST", "/function_calls", allowed))[0] == 201
        assert (await first.call("POST", "/contact_requests", contact()))[0] == 201
    async with serve(db_url, clock, line) as second:
        hl = second.sdk()
        pending = await asyncio.to_thread(hl.get_function_call, "call-1")
        assert pending.status is not None and pending.status.approved is None
        read = await asyncio.to_thread(hl.get_function_call, "call-read")
        assert read.status is not None and read.status.approved is True
        await second.gate.resolve((await second.pending("deploy")).id, "approve", by="bob")
        await second.gate.resolve(
            (await second.pending(CONTACT_TOOL)).id, "approve", by="alice", reason="eu"
        )
        done = await asyncio.to_thread(hl.get_function_call, "call-1")
        assert done.status is not None and done.status.approved is True
        answered: HumanContact = await asyncio.to_thread(hl.get_human_contact, "call-c")
        assert answered.status is not None and answered.status.response == "eu"


# -- what agents may not do, and errors ---------------------------------------------------


async def test_respond_endpoints_are_refused_and_change_nothing(served: Served) -> None:
    hl = served.sdk()
    call = await asyncio.to_thread(hl.create_function_call, spec_of("deploy"), "call-1")
    asked = await asyncio.to_thread(hl.create_human_contact, contact_spec(), "call-c")
    with pytest.raises(HumanLayerException, match="responses come from approvers"):
        await asyncio.to_thread(
            hl.respond_to_function_call, call.call_id, FunctionCallStatus(approved=True)
        )
    with pytest.raises(HumanLayerException, match="403"):
        await asyncio.to_thread(
            hl.respond_to_human_contact, asked.call_id, HumanContactStatus(response="yes")
        )
    for path in (
        "/agent/function_calls/call-1/respond",
        "/agent/human_contacts/call-c/respond",
        "/function_calls/call-1/respond",
        "/contact_requests/call-c/respond",
        "/agent/function_calls/unknown/respond",
    ):
        status, body = await served.call("POST", path, {"approved": True, "comment": "ok"})
        assert (status, body["error"]["code"]) == (403, "forbidden"), path
    status, body = await served.call(
        "POST", "/agent/function_calls/call-1/escalate_email", {"escalation_msg": "hurry"}
    )
    assert (status, body["error"]["code"]) == (501, "not_implemented")
    assert [r.status for r in await served.store.list_requests()] == ["pending", "pending"]


def contact_spec() -> Any:
    from humanlayer import HumanContactSpec

    return HumanContactSpec(msg="Which region?")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/function_calls"),
        ("GET", "/function_calls/call-1"),
        ("POST", "/contact_requests"),
        ("GET", "/contact_requests/call-1"),
        ("POST", "/agent/function_calls/call-1/respond"),
        ("GET", "/no/such/route"),
    ],
)
@pytest.mark.parametrize("token", [None, "wrong-token", CI + "x"])
async def test_no_valid_token_is_a_401(
    served: Served, method: str, path: str, token: str | None
) -> None:
    body = function_call() if method == "POST" else None
    status, answer = await served.call(method, path, body, token=token)
    assert (status, answer["error"]["code"]) == (401, "unauthorized")


async def test_the_sdk_with_a_wrong_key_reports_the_401(served: Served) -> None:
    @served.sdk(token="wrong-token").require_approval()
    def deploy(env: str) -> str:
        raise AssertionError("must not run")

    result = await asyncio.to_thread(deploy, env="prod")
    assert result.startswith("Error fetching approval for deploy: 401")
    assert "invalid bearer token" in result


BAD_BODIES = [
    (b"{not json", "invalid_json", None),
    (b"[]", "invalid_body", None),
    (json.dumps({**function_call(), "call_id": None}).encode(), "invalid_body", "call_id"),
    (json.dumps({**function_call(), "call_id": "a/b"}).encode(), "invalid_body", "call_id"),
    (json.dumps({**function_call(), "run_id": "r" * 201}).encode(), "invalid_body", "run_id"),
    (
        json.dumps({**function_call(), "status": {"approved": True}}).encode(),
        "invalid_body",
        "status",
    ),
    (json.dumps({**function_call(), "wat": 1}).encode(), "invalid_body", "wat"),
    (
        json.dumps({**function_call(), "spec": {"fn": "deploy"}}).encode(),
        "invalid_body",
        "spec.kwargs",
    ),
    (json.dumps(function_call(fn=CONTACT_TOOL)).encode(), "invalid_body", "spec.fn"),
    (
        json.dumps(function_call()).replace("{}", '{"x": [1, NaN]}').encode(),
        "invalid_body",
        "spec.kwargs.x[1]",
    ),
]


@pytest.mark.parametrize(("raw", "code", "path"), BAD_BODIES)
async def test_a_malformed_function_call_is_a_400_naming_the_field(
    served: Served, raw: bytes, code: str, path: str | None
) -> None:
    status, body = await served.call("POST", "/function_calls", raw=raw)
    assert (status, body["error"]["code"], body["error"]["path"]) == (400, code, path)
    assert await served.store.list_requests() == []


async def test_a_malformed_contact_is_a_400_naming_the_field(served: Served) -> None:
    empty = contact(msg="")
    status, body = await served.call("POST", "/contact_requests", empty)
    assert (status, body["error"]["path"]) == (400, "spec.msg")
    status, body = await served.call("POST", "/contact_requests", {**contact(), "spec": "hi"})
    assert (status, body["error"]["path"]) == (400, "spec")


async def test_framework_errors_are_json(served: Served) -> None:
    status, body = await served.call("GET", "/nothing/here")
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = await served.call("DELETE", "/function_calls/call-1")
    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    status, body = await served.call("POST", "/function_calls", raw=b"x" * (1024 * 1024 + 1))
    assert (status, body["error"]["code"]) == (413, "payload_too_large")


# -- the store's side -------------------------------------------------------------------


async def test_client_calls_keep_the_first_writer_and_exactly_one_answer(
    store: Store, clock: ManualClock
) -> None:
    decision = Decision(
        verdict="deny", status="denied", source="policy", decided_by="r", reason="no", rule="r"
    )
    first = ClientCall(
        agent="ci", call_id="c1", kind="k", body="{}", created_at=clock.now(), decision=decision
    )
    assert await store.calls.add(first) == (first, True)
    again = ClientCall(agent="ci", call_id="c1", kind="k", body='{"x":1}', created_at=clock.now())
    assert await store.calls.add(replace(again, decision=decision)) == (first, False)
    assert await store.calls.get("ci", "c1") == first
    assert await store.calls.get("other", "c1") is None
    with pytest.raises(IntegrityError):  # neither a request nor a decision
        await store.calls.add(replace(again, call_id="c2"))
    with pytest.raises(IntegrityError):  # a request that does not exist
        await store.calls.add(replace(again, call_id="c3", request_id="nope"))


async def test_an_edited_approval_is_not_an_approval_of_the_call_as_sent(served: Served) -> None:
    """The SDK would run its own call: it is told no, and what the approver approved instead."""

    @served.sdk().require_approval()
    def deploy(env: str) -> str:
        raise AssertionError("must not run: the approver approved another call")

    task = asyncio.create_task(asyncio.to_thread(deploy, env="prod"))
    request = await served.pending("deploy")
    tap = Tap(channel="line", user_id=ALICE, action="approve", request_id=request.id)
    assert (await approve_edit(served.gate, tap, {"env": "staging"})).applied
    said = await asyncio.wait_for(task, 10)
    assert "alice approved this call only with edited arguments" in said
    assert '{"env":"staging"}' in said
