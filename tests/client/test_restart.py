"""The Python client rides out a server restart: ``RemoteGate``, ``SyncRemoteGate``, the plans.

Against a real ``tapgate serve`` (tests/client/restarts.py) stopped with
SIGTERM while the client waits and started again on the same port and
SQLite file: the waiting ``check`` re-attaches to its request by id and is
approved by a LINE tap on the new process. A server that stays down past
``retry_for``, or past the request's own ``expires_at``, ends the wait with
a ``ClientError``. The window's arithmetic is pinned on the sans-I/O plans
with a recorded sleep, so those tests take no time.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tapgate.client import DEFAULT_RETRY_FOR, ClientError, RemoteGate, SyncRemoteGate
from tapgate.client._plans import Planner, Send, TransportFailure, drive
from tapgate.client._wire import Reply
from tapgate.gate.models import Decision, ToolCall
from tests.client.restarts import (
    Restartable,
    assert_reattached,
    restartable,
    ride_out,
    within,
)
from tests.replicas import TOKEN

DEPLOY = ToolCall(tool="deploy", arguments={"env": "prod"})
Waiting = asyncio.Future[Decision]


def remote(url: str, retry_for: float) -> RemoteGate:
    """A gate with a small backoff: a test waits for the restart, not for the client's pauses."""
    return RemoteGate(url, TOKEN, retry_for=retry_for, backoff=0.05, long_poll=5)


def sync_remote(url: str, retry_for: float) -> SyncRemoteGate:
    return SyncRemoteGate(url, TOKEN, retry_for=retry_for, backoff=0.05, long_poll=5)


def test_the_default_window_outlasts_a_restart() -> None:
    assert DEFAULT_RETRY_FOR >= 60


async def test_remote_gate_keeps_waiting_through_a_restart(tmp_path: Path) -> None:
    async with restartable(tmp_path) as server:
        async with remote(server.url, 30) as gate:  # pooled
            waiting = asyncio.ensure_future(gate.check(DEPLOY))
            request_id = await within(60, ride_out(server, waiting, down=1.5))
            decision = await within(60, waiting)
        assert decision.allowed and decision.decided_by == "alice"
        assert decision.request_id == request_id
        await assert_reattached(server, request_id)


async def test_sync_remote_gate_keeps_waiting_through_a_restart(tmp_path: Path) -> None:
    async with restartable(tmp_path) as server:
        with sync_remote(server.url, 30) as gate:
            waiting = asyncio.ensure_future(asyncio.to_thread(gate.check, DEPLOY))
            request_id = await within(60, ride_out(server, waiting, down=1.5))
            decision = await within(60, waiting)
        assert decision.allowed and decision.decided_by == "alice"
        await assert_reattached(server, request_id)


@pytest.mark.parametrize("sync", [False, True])
async def test_a_server_down_past_retry_for_is_a_client_error(tmp_path: Path, sync: bool) -> None:
    async with restartable(tmp_path) as server:
        if sync:
            with sync_remote(server.url, 1.5) as blocking:
                waiting = asyncio.ensure_future(asyncio.to_thread(blocking.check, DEPLOY))
                sent, ended = await _gone_under(server, waiting)
        else:
            waiting = asyncio.ensure_future(remote(server.url, 1.5).check(DEPLOY))
            sent, ended = await _gone_under(server, waiting)
    with pytest.raises(ClientError) as caught:
        waiting.result()
    assert caught.value.code == "unreachable" and "ConnectError" in str(caught.value)
    assert 1.5 <= ended - sent <= 20, ended - sent  # the window, counted from the first failure


async def test_the_window_ends_at_the_requests_expiry(tmp_path: Path) -> None:
    """A request that expires in 5 s is not waited for a minute: nothing is left to decide."""
    policy = "{default_timeout: 5s, rules: [{tool: deploy, action: ask}]}"
    async with restartable(tmp_path, policy) as server:
        started = time.monotonic()
        waiting = asyncio.ensure_future(remote(server.url, 60).check(DEPLOY))
        _, ended = await _gone_under(server, waiting)
    with pytest.raises(ClientError, match="ConnectError"):
        waiting.result()
    assert 4.5 <= ended - started <= 20, ended - started  # at the expiry, far from 60 s


async def _gone_under(
    server: Restartable, waiting: asyncio.Future[Decision]
) -> tuple[float, float]:
    """SIGTERM under the waiting client, never started again: (when sent, when the client ended)."""
    ended: list[float] = []
    waiting.add_done_callback(lambda _: ended.append(time.monotonic()))
    await server.pending()
    await asyncio.sleep(0.3)
    sent = time.monotonic()
    await server.stop()
    await within(60, asyncio.wait([waiting]))
    return sent, ended[0]


# -- the window in the plans, with a recorded sleep ----------------------------------------


class Refused:
    """A driver's ``send`` for a server that is gone: every request is refused, and counted."""

    def __init__(self) -> None:
        self.sent: list[Send] = []

    def __call__(self, step: Send) -> Reply:
        self.sent.append(step)
        raise TransportFailure("ConnectError", "[Errno 111] Connection refused", never_sent=True)


def _planner(retry_for: float) -> Planner:
    return Planner(timeout=1.0, retries=3, backoff=0.5, long_poll=60, retry_for=retry_for)


def test_a_wait_retries_for_the_window_then_fails() -> None:
    planner, pauses = _planner(30), list[float]()
    with pytest.raises(ClientError) as caught:
        drive(planner.wait("req-1", None), Refused(), pauses.append)
    assert caught.value.code == "unreachable"
    assert 30 <= sum(pauses) <= 30 + 3.5  # the 3 quick retries (<= 3.5 s) count in the window
    assert max(pauses) <= 10  # capped backoff: a restart is noticed within 10 s


def test_the_window_is_capped_by_the_expiry_the_submit_reported() -> None:
    planner, pauses = _planner(600), list[float]()
    expires = datetime.now(UTC) + timedelta(seconds=20)
    planner.expiries.note("req-1", expires.isoformat())
    with pytest.raises(ClientError):
        drive(planner.wait("req-1", None), Refused(), pauses.append)
    assert 19 <= sum(pauses) <= 20.5  # the expiry, far inside the 600 s window


def test_the_window_is_capped_by_the_waits_own_timeout() -> None:
    planner, pauses = _planner(600), list[float]()
    with pytest.raises(ClientError):
        drive(planner.wait("req-1", 12), Refused(), pauses.append)
    assert 11 <= sum(pauses) <= 12.5


def test_after_giving_up_the_next_call_is_quick_until_the_server_answers() -> None:
    """A withdraw after a failed wait must not wait out a second window."""
    planner, pauses = _planner(30), list[float]()
    with pytest.raises(ClientError):
        drive(planner.wait("req-1", None), Refused(), pauses.append)
    refused, pauses = Refused(), list[float]()
    with pytest.raises(ClientError):
        drive(planner.cancel("req-1", None), refused, pauses.append)
    assert len(refused.sent) == 4 and sum(pauses) <= 3.5  # the quick retries only
    planner.outage.answered()  # the server is back: the next outage gets a whole window
    with pytest.raises(ClientError):
        drive(planner.wait("req-1", None), Refused(), pauses.append)
    assert sum(pauses) >= 30


def test_a_submit_that_may_have_acted_is_not_resent_inside_the_window() -> None:
    """Its answer lost, the request may be decided already: the window never re-sends it."""
    sent: list[Send] = []

    def lost(step: Send) -> Reply:
        sent.append(step)
        raise TransportFailure("ReadError", "connection reset", never_sent=False)

    with pytest.raises(ClientError, match="ReadError"):
        drive(_planner(60).submit(DEPLOY), lost, list[float]().append)
    assert len(sent) == 1


def test_a_zero_window_keeps_the_quick_retries_only() -> None:
    refused, pauses = Refused(), list[float]()
    with pytest.raises(ClientError):
        drive(_planner(0).wait("req-1", None), refused, pauses.append)
    assert len(refused.sent) == 4 and len(pauses) == 3
