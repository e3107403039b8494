"""The retry policy, the console notifier and the shipped recording notifier."""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapgate.channels.console.notifier import ConsoleNotifier
from tapgate.delivery.notifier import Notifier, Receipt
from tapgate.delivery.recording import RecordingNotifier
from tapgate.delivery.retry import (
    OUTBOX_MAX_DELAY,
    RetryPolicy,
    build_retrying,
    delivery_retry_after,
    is_retryable_delivery,
    is_transient_status,
    is_transport_error,
    may_have_been_delivered,
    outbox_backoff,
    parse_retry_after,
)
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tests.factories import make_request
from tests.fakes.sleeps import Sleeps

NOW = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)
DELIVERY = Delivery(approver="alice", channel="console", address="alice")


class Flaky:
    """Raises the scripted errors in order, then returns ``"done"``."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


# retry policy


async def test_transient_errors_back_off_exponentially_up_to_the_cap() -> None:
    sleeps = Sleeps()
    flaky = Flaky(*[DeliveryError("503", status=503)] * 5)
    policy = RetryPolicy(attempts=6, base_delay=1.0, max_delay=4.0, jitter=0.0)
    retrying = build_retrying(
        policy, retryable=is_retryable_delivery, retry_after=delivery_retry_after, sleep=sleeps
    )
    assert await retrying(flaky) == "done"
    assert sleeps.delays == [1.0, 2.0, 4.0, 4.0, 4.0]


async def test_jitter_adds_at_most_its_bound() -> None:
    sleeps = Sleeps()
    policy = RetryPolicy(attempts=4, base_delay=0.5, max_delay=8.0, jitter=0.25)
    retrying = build_retrying(
        policy, retryable=is_retryable_delivery, retry_after=delivery_retry_after, sleep=sleeps
    )
    await retrying(Flaky(*[DeliveryError("x")] * 3))
    for delay, base in zip(sleeps.delays, [0.5, 1.0, 2.0], strict=True):
        assert base <= delay <= base + 0.25


async def test_retry_after_replaces_the_backoff() -> None:
    sleeps = Sleeps()
    flaky = Flaky(DeliveryError("429", status=429, retry_after=12), DeliveryError("503"))
    assert (
        await build_retrying(
            RetryPolicy(jitter=0.0),
            retryable=is_retryable_delivery,
            retry_after=delivery_retry_after,
            sleep=sleeps,
        )(flaky)
        == "done"
    )
    assert sleeps.delays == [12.0, 1.0]


async def test_a_retry_after_beyond_the_cap_gives_up_with_the_error() -> None:
    sleeps = Sleeps()
    error = DeliveryError("429", status=429, retry_after=61)
    flaky = Flaky(error)
    retrying = build_retrying(
        RetryPolicy(max_retry_after=60),
        retryable=is_retryable_delivery,
        retry_after=delivery_retry_after,
        sleep=sleeps,
    )
    with pytest.raises(DeliveryError) as caught:
        await retrying(flaky)
    assert caught.value is error
    assert (flaky.calls, sleeps.delays) == (1, [])


async def test_permanent_and_foreign_errors_are_not_retried() -> None:
    for error in [PermanentDeliveryError("400", status=400), ValueError("bug")]:
        sleeps = Sleeps()
        flaky = Flaky(error)
        retrying = build_retrying(
            RetryPolicy(),
            retryable=is_retryable_delivery,
            retry_after=delivery_retry_after,
            sleep=sleeps,
        )
        with pytest.raises(type(error)) as caught:
            await retrying(flaky)
        assert caught.value is error
        assert (flaky.calls, sleeps.delays) == (1, [])


async def test_exhausted_attempts_reraise_the_last_error() -> None:
    sleeps = Sleeps()
    last = DeliveryError("third")
    flaky = Flaky(DeliveryError("first"), DeliveryError("second"), last)
    retrying = build_retrying(
        RetryPolicy(attempts=3),
        retryable=is_retryable_delivery,
        retry_after=delivery_retry_after,
        sleep=sleeps,
    )
    with pytest.raises(DeliveryError) as caught:
        await retrying(flaky)
    assert caught.value is last
    assert len(sleeps.delays) == 2


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="negative"):
        RetryPolicy(base_delay=-1)


def test_outbox_backoff_doubles_from_five_seconds_to_fifteen_minutes() -> None:
    for attempts, base in [(0, 5.0), (1, 5.0), (2, 10.0), (3, 20.0), (9, 900.0), (10**6, 900.0)]:
        delay = outbox_backoff(attempts)
        assert base <= delay <= base * 1.1
    assert outbox_backoff(1, retry_after=120) == 120
    assert outbox_backoff(1, retry_after=1) >= 5


@given(st.integers(min_value=-5, max_value=10**9))
def test_outbox_backoff_is_always_bounded(attempts: int) -> None:
    assert 5.0 <= outbox_backoff(attempts) <= OUTBOX_MAX_DELAY * 1.1


def test_classification() -> None:
    assert is_transport_error(TimeoutError())
    assert is_transport_error(aiohttp.ServerDisconnectedError())
    assert is_transport_error(aiohttp.ServerTimeoutError())
    assert is_transport_error(ConnectionResetError())
    assert not is_transport_error(ValueError())
    assert may_have_been_delivered(aiohttp.ServerDisconnectedError())
    assert may_have_been_delivered(TimeoutError())
    assert not may_have_been_delivered(ValueError())
    assert [is_transient_status(s) for s in (None, 200, 400, 409, 429, 500, 503)] == [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    assert not is_retryable_delivery(PermanentDeliveryError("x"))
    assert not is_retryable_delivery(TimeoutError())
    assert delivery_retry_after(DeliveryError("x", retry_after=3)) == 3
    assert delivery_retry_after(TimeoutError()) is None


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        (" 0 ", 0.0),
        ("1.5", 1.5),
        (None, None),
        ("-1", None),
        ("soon", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


# console


def _shell_request() -> Request:
    return make_request(
        NOW,
        tool="bash",
        session="sess-1",
        arguments={"command": "curl -H 'Authorization: Bearer abc123secret' x\x1b[2J"},
    )


async def test_console_prints_a_masked_summary_and_the_resolve_commands() -> None:
    stream = io.StringIO()
    notifier = ConsoleNotifier(stream)
    request = _shell_request()
    receipt = await notifier.send(request, DELIVERY, key="k1")

    out = stream.getvalue()
    assert receipt == Receipt(channel="console", address="alice", ref={})
    assert f"tapgate resolve {request.id} approve --as alice" in out
    assert f'tapgate resolve {request.id} deny --as alice --reason "..."' in out
    assert "bash" in out
    assert "agent-1" in out
    assert "abc123secret" not in out
    assert "\x1b" not in out
    assert "⟨U+001B⟩" in out
    await notifier.close()


async def test_console_quotes_names_in_the_commands() -> None:
    stream = io.StringIO()
    delivery = Delivery(approver="o'brien; rm -rf ~", channel="console", address="x")
    await ConsoleNotifier(stream).send(_shell_request(), delivery, key="k1")
    assert "--as 'o'\"'\"'brien; rm -rf ~'" in stream.getvalue()


async def test_console_update_prints_the_outcome(capsys: pytest.CaptureFixture[str]) -> None:
    notifier = ConsoleNotifier()  # standard output, read at write time
    request = _shell_request()
    receipt = await notifier.send(request, DELIVERY, key="k1")
    capsys.readouterr()

    await notifier.update(request, receipt)  # still pending: nothing to say
    assert capsys.readouterr().out == ""
    decided = replace(
        request,
        status="denied",
        resolved_by="alice",
        resolved_at=NOW + timedelta(minutes=3),
        resolution_reason="not on a Friday",
    )
    await notifier.update(decided, receipt)
    out = capsys.readouterr().out
    assert (
        out
        == f"[tapgate] request {request.id}: ❌ Denied by alice at 12:03 UTC (not on a Friday)\n"
    )


# recording


def test_every_notifier_satisfies_the_protocol() -> None:
    assert isinstance(ConsoleNotifier(), Notifier)
    assert isinstance(RecordingNotifier(), Notifier)
    assert RecordingNotifier("slack").channel == "slack"


async def test_recording_notifier_records_and_fails_on_script() -> None:
    notifier = RecordingNotifier()
    request = make_request(NOW)
    notifier.fail_next(DeliveryError("flaky"), PermanentDeliveryError("gone"))

    with pytest.raises(DeliveryError, match="flaky"):
        await notifier.send(request, DELIVERY, key="k1")
    with pytest.raises(PermanentDeliveryError, match="gone"):
        await notifier.send(request, DELIVERY, key="k1")
    receipt = await notifier.send(request, DELIVERY, key="k1")

    assert receipt == Receipt(channel="recording", address="alice", ref={"id": "1"})
    assert [(c.key, type(c.error).__name__) for c in notifier.calls] == [
        ("k1", "DeliveryError"),
        ("k1", "PermanentDeliveryError"),
        ("k1", "NoneType"),
    ]
    [sent] = notifier.sends
    assert (sent.request, sent.delivery, sent.key, sent.receipt) == (
        request,
        DELIVERY,
        "k1",
        receipt,
    )

    notifier.fail_next_update(DeliveryError("later"))
    with pytest.raises(DeliveryError, match="later"):
        await notifier.update(request, receipt)
    await notifier.update(request, receipt)
    assert [(u.request, u.receipt) for u in notifier.updates] == [(request, receipt)]
    await notifier.close()
    assert notifier.closed


async def test_recording_notifier_can_be_awaited_and_held() -> None:
    notifier = RecordingNotifier()
    request = make_request(NOW)
    notifier.hold()
    task = asyncio.create_task(notifier.send(request, DELIVERY, key="k1"))

    await notifier.wait_for_calls(1)
    assert notifier.sends == []
    with pytest.raises(TimeoutError):
        await notifier.wait_for_sends(1, timeout=0.05)
    notifier.release()
    await notifier.wait_for_sends(1)
    assert (await task).ref == {"id": "1"}

    waiter = asyncio.create_task(notifier.wait_for_updates(1))
    await notifier.update(request, await task)
    await waiter
