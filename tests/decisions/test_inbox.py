"""Record before acknowledging, in process: stored before the 200, applied once, replayed once.

The real app (``build_app``) with the fake LINE and Slack APIs and a manual
clock. What a SIGKILL does to a real server is ``tests/e2e/test_inbox_crash.py``;
here are the pieces it relies on: a replay of an event already applied
changes nothing, a store that cannot record the tap answers no 200, the
heartbeat replays what was left (and gives up on what can never apply), and
a Slack interaction has a stable event id.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import Connection, text

from tapgate.channels.line import events as _line_events
from tapgate.channels.slack import inbox as _slack_inbox
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.channels.slack.payloads import parse_action
from tapgate.config import parse_config
from tapgate.decisions.webhook_inbox import MAX_ATTEMPTS, REPLAY_AFTER
from tapgate.delivery import RecordingNotifier
from tapgate.errors import ConfigError
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import AuditEntry, Request
from tapgate.server.app import HEARTBEAT, build_app
from tapgate.server.keys import INBOX, STORE
from tapgate.server.test_hooks import APPLY_DELAY_VARIABLE, apply_delay
from tests.channels.line import test_webhook_line as line_tests
from tests.channels.slack import test_webhook_slack as slack_tests
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.receivers import line_webhook
from tests.fakes.slack import DEFAULT_BOT_TOKEN

Client = TestClient[web.Request, web.Application]
Connect = Callable[[web.Application], Awaitable[Client]]


@pytest.fixture
async def line(db_url: str, clock: ManualClock, aiohttp_client: Connect) -> AsyncIterator[Any]:
    async with FakeLine(access_token=line_tests.TOKEN) as fake:
        config = line_tests.config(fake.url, db_url)
        app = build_app(config, clock=clock, notifiers=[RecordingNotifier("line")])
        client = await aiohttp_client(app)
        yield line_tests.Served(app=app, client=client, line=fake, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


@pytest.fixture
async def slack(
    migrated_sqlite_url: str, clock: ManualClock, aiohttp_client: Connect
) -> AsyncIterator[Any]:
    async with FakeSlack() as fake:
        notifier = SlackNotifier(DEFAULT_BOT_TOKEN, api_base_url=fake.url, timeout=5)
        config = slack_tests.make_config(fake.url, migrated_sqlite_url)
        app = build_app(config, clock=clock, notifiers=[notifier])
        client = await aiohttp_client(app)
        yield slack_tests.Served(app=app, client=client, slack=fake, clock=clock)
        await client.close()  # the app stops (its dispatcher too) before the fakes do


def decided(audit: list[AuditEntry]) -> list[tuple[str, str]]:
    return [(e.event, e.actor) for e in audit if e.event in ("approved", "denied", "refused")]


async def drop_inbox(app: web.Application) -> None:
    """Make the inbox's INSERT fail, as a lost or full database would."""

    def drop(conn: Connection) -> None:
        conn.execute(text("DROP TABLE webhook_inbox"))

    await app[STORE].run(drop)


# -- a replay of an applied event changes nothing -------------------------------------


async def test_a_replayed_line_event_already_applied_changes_nothing(line: Any) -> None:
    request: Request = await line.ask()
    item = line_tests.tap_event("approve", request, user=line_tests.ALICE)
    body = line_tests.payload(item)
    assert await line.post(body) == (200, {"ok": True})
    before = await line.gate.get_request(request.id)
    audit = await line.gate.audit_log(request_id=request.id)
    assert decided(audit) == [("approved", "alice")]
    inbox = line.app[INBOX]
    assert await inbox.pending() == 0  # deleted by the decision's transaction

    # The same event stored again, as if the row had outlived its decision, and replayed.
    [event] = _line_events.EventReader(line_tests.SECRET).read(body, line_tests.sign(body))
    await inbox.record("line", [(event.event_id, _line_events.encode(event))])
    assert await inbox.replay(received_before=line.clock.now() + timedelta(seconds=1)) == 1
    await line_webhook(line.app).settled()

    assert await line.gate.get_request(request.id) == before
    assert await line.gate.audit_log(request_id=request.id) == audit
    assert len(line.line.replies) == 1  # the live tap's reply only; a duplicate says nothing
    assert await inbox.pending() == 0  # the replay settled it


async def test_a_replayed_slack_tap_already_applied_changes_nothing(slack: Any) -> None:
    request: Request = await slack.ask()
    message = await slack.posted(request, slack_tests.ALICE)
    body = slack_tests.click(slack, "approve", request, message=message)
    assert (await slack.post(slack_tests.form(body)))[0] == 200
    await slack.settled()
    before = await slack.gate.get_request(request.id)
    assert before.status == "approved"
    audit = await slack.gate.audit_log(request_id=request.id)
    inbox = slack.app[INBOX]
    assert await inbox.pending() == 0

    interaction = parse_action(body)
    assert interaction is not None
    stored = (_slack_inbox.event_id(body), _slack_inbox.encode(interaction))
    await inbox.record("slack", [stored])
    assert await inbox.replay(received_before=slack.clock.now() + timedelta(seconds=1)) == 1
    await slack.settled()

    assert await slack.gate.get_request(request.id) == before
    assert await slack.gate.audit_log(request_id=request.id) == audit
    assert slack.slack.ephemerals == []
    assert await inbox.pending() == 0


async def test_the_same_slack_payload_twice_decides_once_and_says_nothing_twice(
    slack: Any,
) -> None:
    request: Request = await slack.ask()
    message = await slack.posted(request, slack_tests.ALICE)
    body = slack_tests.form(slack_tests.click(slack, "approve", request, message=message))
    assert (await slack.post(body))[0] == 200
    assert (await slack.post(body))[0] == 200  # e.g. Socket Mode re-sending an envelope
    await slack.settled()
    audit = await slack.gate.audit_log(request_id=request.id)
    assert decided(audit) == [("approved", "alice")]
    assert slack.slack.ephemerals == []


# -- no 200 unless stored -------------------------------------------------------------


async def test_a_line_tap_that_cannot_be_stored_gets_no_200_and_decides_nothing(
    line: Any,
) -> None:
    request: Request = await line.ask()
    await drop_inbox(line.app)
    status, _ = await line.post(line_tests.payload(line_tests.tap_event("approve", request)))
    assert status == 503  # LINE redelivers it (same webhookEventId) when redelivery is on
    await line_tests.assert_untouched(line, request)
    assert line.line.replies == []


async def test_a_slack_tap_that_cannot_be_stored_gets_no_ack_and_decides_nothing(
    slack: Any,
) -> None:
    request: Request = await slack.ask()
    message = await slack.posted(request, slack_tests.ALICE)
    await drop_inbox(slack.app)
    body = slack_tests.click(slack, "approve", request, message=message)
    status, _ = await slack.post(slack_tests.form(body))
    assert status == 503  # Slack shows the tapper an error; they tap again
    await slack.settled()
    assert (await slack.gate.get_request(request.id)).status == "pending"
    assert slack.metric("tapgate_webhook_rejections_total", platform="slack", reason="payload") == 0


# -- the heartbeat replays what was left ----------------------------------------------


async def test_the_heartbeat_replays_a_left_event_once_it_is_old_enough(line: Any) -> None:
    request: Request = await line.ask()
    body = line_tests.payload(line_tests.tap_event("deny", request, user=line_tests.BOB))
    [event] = _line_events.EventReader(line_tests.SECRET).read(body, line_tests.sign(body))
    inbox = line.app[INBOX]
    await inbox.record("line", [(event.event_id, _line_events.encode(event))])  # then a crash

    await line.app[HEARTBEAT].beat()  # too fresh: its own process may be applying it
    await line_webhook(line.app).settled()
    assert (await line.gate.get_request(request.id)).status == "pending"

    line.clock.advance(REPLAY_AFTER.total_seconds() + 1)
    await line.app[HEARTBEAT].beat()
    await line_webhook(line.app).settled()
    current = await line.gate.get_request(request.id)
    assert (current.status, current.resolved_by) == ("denied", "bob")
    assert await inbox.pending() == 0


async def test_an_event_that_never_applies_is_handed_back_a_bounded_number_of_times(
    line: Any,
) -> None:
    inbox = line.app[INBOX]
    await inbox.record("line", [("E-DAMAGED", json.dumps({"not": "an event"}))])
    later = line.clock.now() + timedelta(seconds=1)
    handed = [await inbox.replay(received_before=later) for _ in range(MAX_ATTEMPTS + 2)]
    assert handed == [1] * MAX_ATTEMPTS + [0, 0]
    assert await inbox.pending() == 1  # left for the operator; forgotten with old event ids


# -- Slack's event id -----------------------------------------------------------------


def _clicked(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": "U0ALICE", "team_id": "T0"},
        "trigger_id": "123.abc",
        "actions": [{"action_id": "tapgate_approve", "value": "r1", "action_ts": "1.5"}],
        "message": {"blocks": []},
    }
    return body | changes


def test_a_slack_event_id_names_one_act_by_one_person() -> None:
    first = _slack_inbox.event_id(_clicked())
    assert first == _slack_inbox.event_id(_clicked())  # a re-send of the same act
    assert first == _slack_inbox.event_id(_clicked(message={"blocks": ["re-rendered"]}))
    assert first != _slack_inbox.event_id(_clicked(trigger_id="124.abd"))  # another click
    other_user = _clicked(user={"id": "U0BOB", "team_id": "T0"})
    assert first != _slack_inbox.event_id(other_user)
    later = _clicked(actions=[{"action_id": "tapgate_approve", "value": "r1", "action_ts": "2"}])
    assert first != _slack_inbox.event_id(later)
    untriggered = _clicked(trigger_id=None)
    assert _slack_inbox.event_id(untriggered) == _slack_inbox.event_id(dict(untriggered))
    assert len(first) == 32


def test_a_stored_slack_tap_reads_back_as_it_was_and_damage_reads_as_nothing() -> None:
    interaction = parse_action(
        _clicked(
            actions=[{"action_id": "tapgate_approve_session", "value": "r1", "action_ts": "1"}]
        )
    )
    assert interaction is not None
    assert _slack_inbox.decode(_slack_inbox.encode(interaction)) == interaction.__class__(
        **{**_fields(interaction), "trigger_id": None}
    )
    for damaged in ("", "[]", '{"v": 2}', '{"v": 1, "batch": false, "action": "approve"}'):
        assert _slack_inbox.decode(damaged) is None


def _fields(interaction: Any) -> dict[str, Any]:
    return {name: getattr(interaction, name) for name in interaction.__dataclass_fields__}


# -- the test hook is refused where it does not belong ---------------------------------


def _config(**server: Any) -> Any:
    return parse_config({"server": server, "store": {"url": "sqlite:///t.db"}}, env={})


def test_the_apply_delay_hook_is_read_only_in_a_test_set_up() -> None:
    assert apply_delay(_config(), {}) == 0
    assert apply_delay(_config(host="127.0.0.1"), {APPLY_DELAY_VARIABLE: "2.5"}) == 2.5
    assert apply_delay(_config(host="::1"), {APPLY_DELAY_VARIABLE: "1"}) == 1
    refused = [
        (_config(host="0.0.0.0"), "1"),
        (_config(public_url="https://tapgate.example.com"), "1"),
        (_config(), "soon"),
        (_config(), "-1"),
        (_config(), "3600"),
        (
            parse_config({"store": {"url": "postgresql://u@db/tapgate"}}, env={}),
            "1",
        ),
    ]
    for config, value in refused:
        with pytest.raises(ConfigError, match=APPLY_DELAY_VARIABLE):
            apply_delay(config, {APPLY_DELAY_VARIABLE: value})
