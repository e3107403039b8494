"""LineNotifier against the fake LINE API, through the real line-bot-sdk client.

Every fault ends in exactly one delivered push because every attempt carries
the same ``X-Line-Retry-Key``; no test waits for a backoff (the retry policy's
sleep is a recorder).
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from tapgate.channels.line.flex import render_line
from tapgate.channels.line.notifier import LineNotifier
from tapgate.delivery.notifier import Notifier, Receipt
from tapgate.delivery.presentation import present
from tapgate.delivery.retry import RetryPolicy
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tests.factories import make_request
from tests.fakes import FakeLine, Fault
from tests.fakes.sleeps import Sleeps

TOKEN = "line-test-channel-access-token"
USER = "U1234567890abcdef1234567890abcdef"
NOW = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)
NO_JITTER = RetryPolicy(jitter=0.0)


@pytest.fixture
async def line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=TOKEN) as fake:
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def notifier(line: FakeLine, sleeps: Sleeps) -> AsyncIterator[LineNotifier]:
    # A short timeout so the scripted hangs end quickly; a local answer takes milliseconds.
    n = LineNotifier(TOKEN, api_base_url=line.url, timeout=1.0, retry=NO_JITTER, sleep=sleeps)
    yield n
    await n.close()


@pytest.fixture
def request_() -> Request:
    return make_request(NOW, tool="deploy", arguments={"target": "prod"})


DELIVERY = Delivery(approver="alice", channel="line", address=USER)


def _key() -> str:
    return str(uuid.uuid4())


async def test_push_delivers_the_flex_message_with_the_retry_key(
    line: FakeLine, notifier: LineNotifier, request_: Request, sleeps: Sleeps
) -> None:
    key = _key()
    receipt = await notifier.send(request_, DELIVERY, key=key)

    [push] = line.pushes
    assert push.to == USER
    assert push.messages == [render_line(present(request_))]
    assert push.messages[0]["type"] == "flex"
    assert push.retry_key == key
    assert receipt == Receipt(
        channel="line", address=USER, ref={"message_id": push.sent_messages[0].id}
    )
    [request] = line.requests_to("push")
    assert request.headers["x-line-retry-key"] == key
    assert sleeps.delays == []


def test_line_notifier_is_a_notifier() -> None:
    assert isinstance(LineNotifier(TOKEN), Notifier)
    assert LineNotifier.channel == "line"


@pytest.mark.parametrize(
    "fault",
    [
        Fault.status(500),
        Fault.status(503),
        Fault.line_rate_limited(),
        Fault.timeout(10),
        Fault.drop(),
        Fault.drop_after_success(),
        Fault.timeout(10, deliver=True),
    ],
    ids=["500", "503", "429", "timeout", "drop", "drop_after_success", "timeout_delivered"],
)
async def test_each_transient_fault_ends_in_exactly_one_push(
    line: FakeLine, notifier: LineNotifier, request_: Request, sleeps: Sleeps, fault: Fault
) -> None:
    line.script("push", fault)
    key = _key()
    receipt = await notifier.send(request_, DELIVERY, key=key)

    [push] = line.pushes
    attempts = line.requests_to("push")
    assert len(attempts) == 2
    assert {a.headers["x-line-retry-key"] for a in attempts} == {key}
    # After a delivered-but-lost attempt the id comes from the 409 body.
    assert receipt.ref == {"message_id": push.sent_messages[0].id}
    assert sleeps.delays == [0.5]


async def test_backoff_grows_and_exhausted_retries_are_retryable(
    line: FakeLine, request_: Request, sleeps: Sleeps
) -> None:
    line.script("push", *[Fault.status(503)] * 4)
    notifier = LineNotifier(TOKEN, api_base_url=line.url, retry=NO_JITTER, sleep=sleeps)
    try:
        with pytest.raises(DeliveryError) as caught:
            await notifier.send(request_, DELIVERY, key=_key())
    finally:
        await notifier.close()

    assert type(caught.value) is DeliveryError
    assert caught.value.retryable is True
    assert caught.value.status == 503
    assert "HTTP 503" in str(caught.value)
    assert len(line.requests_to("push")) == 4
    assert sleeps.delays == [0.5, 1.0, 2.0]
    assert line.pushes == []


async def test_monthly_limit_is_permanent_and_logged_once(
    line: FakeLine, notifier: LineNotifier, request_: Request, caplog: pytest.LogCaptureFixture
) -> None:
    line.script("push", Fault.line_monthly_limit(), Fault.line_monthly_limit())
    caplog.set_level(logging.ERROR, logger="tapgate.channels.line.notifier")

    for _ in range(2):
        with pytest.raises(PermanentDeliveryError) as caught:
            await notifier.send(request_, DELIVERY, key=_key())
        assert caught.value.status == 429
        assert caught.value.retryable is False
        assert "monthly limit" in str(caught.value)

    assert len(line.requests_to("push")) == 2  # one per message: never retried
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "monthly limit" in errors[0].getMessage()


@pytest.mark.parametrize(
    ("fault", "status", "text"),
    [
        (
            Fault.status(
                400,
                {
                    "message": "The request body has 1 error(s)",
                    "details": [{"message": "must be specified", "property": "to"}],
                },
            ),
            400,
            "to: must be specified",
        ),
        (Fault.status(403, {"message": "Access to this API is not available"}), 403, "Access"),
        (Fault.status(404), 404, "HTTP 404"),
    ],
)
async def test_client_errors_are_permanent_and_not_retried(
    line: FakeLine,
    notifier: LineNotifier,
    request_: Request,
    sleeps: Sleeps,
    fault: Fault,
    status: int,
    text: str,
) -> None:
    line.script("push", fault)
    with pytest.raises(PermanentDeliveryError) as caught:
        await notifier.send(request_, DELIVERY, key=_key())
    assert caught.value.status == status
    assert text in str(caught.value)
    assert len(line.requests_to("push")) == 1
    assert sleeps.delays == []


async def test_wrong_token_is_permanent(line: FakeLine, request_: Request, sleeps: Sleeps) -> None:
    notifier = LineNotifier("wrong", api_base_url=line.url, sleep=sleeps)
    try:
        with pytest.raises(PermanentDeliveryError) as caught:
            await notifier.send(request_, DELIVERY, key=_key())
    finally:
        await notifier.close()
    assert caught.value.status == 401
    assert "Authentication failed" in str(caught.value)
    assert "wrong" not in str(caught.value)
    assert len(line.requests) == 1


async def test_unreachable_server_is_retried_then_retryable(
    request_: Request, sleeps: Sleeps
) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    notifier = LineNotifier(
        TOKEN, api_base_url=f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=2), sleep=sleeps
    )
    try:
        with pytest.raises(DeliveryError) as caught:
            await notifier.send(request_, DELIVERY, key=_key())
    finally:
        await notifier.close()
    assert caught.value.retryable is True
    assert "ClientConnectorError" in str(caught.value)
    assert len(sleeps.delays) == 1


async def test_a_key_that_is_not_a_uuid_becomes_a_stable_one(
    line: FakeLine, notifier: LineNotifier, request_: Request
) -> None:
    line.script("push", Fault.drop_after_success())
    await notifier.send(request_, DELIVERY, key="outbox-row-17")

    keys = {r.headers["x-line-retry-key"] for r in line.requests_to("push")}
    [key] = keys
    assert str(uuid.UUID(key)) == key
    assert len(line.pushes) == 1
    await notifier.send(request_, DELIVERY, key="outbox-row-17")
    assert len(line.pushes) == 1  # same outbox key, same retry key: 409, not a second push


async def test_shell_tools_show_their_command(
    line: FakeLine, sleeps: Sleeps, request_: Request
) -> None:
    request = make_request(NOW, tool="runner", arguments={"script": "make deploy"})
    notifier = LineNotifier(
        TOKEN, api_base_url=line.url, sleep=sleeps, tool_shell_args={"runner": "script"}
    )
    try:
        await notifier.send(request, DELIVERY, key=_key())
    finally:
        await notifier.close()
    [message] = line.pushes[0].messages
    assert message == render_line(present(request, tool_shell_arg="script"))
    assert "Command" in str(message)


async def test_update_is_a_no_op_and_close_is_idempotent(
    line: FakeLine, notifier: LineNotifier, request_: Request
) -> None:
    receipt = await notifier.send(request_, DELIVERY, key=_key())
    await notifier.update(request_, receipt)
    assert len(line.requests) == 1
    await notifier.close()
    await notifier.close()
    # A closed notifier opens a fresh client on the next send.
    await notifier.send(request_, DELIVERY, key=_key())
    assert len(line.pushes) == 2
