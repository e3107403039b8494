"""Edit, then approve, end to end: Slack's modal through the real server to every agent surface.

The real app serves on a loopback port (the sync clients, the hook and
``tapgate run``, need one) with a SQLite file; the real Slack notifier posts
cards to the fake Slack API, and every click and modal submission is signed
for real and posted the way Slack posts them. Agents use the real HTTP API:
a long-poll, the Claude Code hook, ``guard`` over ``RemoteGate`` and
``tapgate run``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.channels.slack import inbox as _slack_inbox
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.channels.slack.payloads import parse_edit_submission
from tapgate.client import GuardError, RemoteGate, guard
from tapgate.client._hook import claude_code_hook
from tapgate.client._run import EXIT_EDITED, run_approved
from tapgate.config import parse_config
from tapgate.gate.gate import Gate
from tapgate.gate.models import GateEvent, Request, args_digest
from tapgate.policy.masking import MASK
from tapgate.server.api.events import event_out
from tapgate.server.app import build_app
from tapgate.server.keys import GATE, INBOX
from tests.fakes import FakeSlack, SlackMessage
from tests.fakes.receivers import slack_webhook
from tests.fakes.served import slack_card, until
from tests.fakes.slack import DEFAULT_BOT_TOKEN
from tests.fakes.taps import slack_form, slack_headers

SECRET = "test-slack-signing-secret-0123"
TEAM = "T0TAPGATE"
TOKEN = "edit-agent-token-0123456789abcdef"
ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"  # carol approves billing only
API_TOKEN = "tok_live_9f8e7d6c5b4a39281706f5e4"  # a secret the agent sends

POLICY: dict[str, Any] = {
    "tools": {"shell": {"shell": "command"}, "Bash": {"shell": "command"}},
    "rules": [
        {
            "tool": "deploy",
            "args": {"env": "staging"},
            "action": "ask",
            "approvers": ["oncall"],
            "timeout": 600,
        },
        {"tool": "deploy", "args": {"env": "prod"}, "action": "deny", "reason": "no prod deploys"},
        {"tool": "deploy", "args": {"env": "qa"}, "action": "ask", "approvers": ["carol"]},
        {"tool": "shell", "action": "ask", "approvers": ["oncall"], "timeout": 600},
        {"tool": "Bash", "action": "ask", "approvers": ["oncall"], "timeout": 600},
        {"tool": "billing", "action": "ask", "approvers": ["carol"]},
    ],
}


def sign(body: bytes) -> dict[str, str]:
    return slack_headers(SECRET, body, int(time.time()))


form = slack_form


@dataclass
class Served:
    """The real app on a loopback port and the fake Slack API."""

    app: web.Application
    url: str
    slack: FakeSlack

    @property
    def gate(self) -> Gate:
        return self.app[GATE]

    async def api(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        """The agent API as the agent calls it, with its bearer token."""
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, self.url + path, json=body, headers=headers) as response,
        ):
            return response.status, await response.json()

    async def post(self, payload: dict[str, Any]) -> tuple[int, str]:
        body = form(payload)
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/webhooks/slack", data=body, headers=sign(body)) as response,
        ):
            return response.status, await response.text()

    async def pending(self) -> Request:
        for _ in range(2000):
            found = await self.gate.store.list_requests(status="pending")
            if found:
                return found[0]
            await asyncio.sleep(0.005)
        raise AssertionError("no pending request appeared")

    async def card(self, request: Request, user: str = ALICE) -> SlackMessage:
        return await slack_card(self.slack, user, request.id)

    async def open_edit(self, request: Request, user: str = ALICE) -> dict[str, Any]:
        """Click the card's Edit… button; the modal tapgate opened."""
        message = await self.card(request)
        opened = len(self.slack.views)
        status, _ = await self.post(click(self, "edit", request, user=user, message=message))
        assert status == 200
        await until(lambda: len(self.slack.views) > opened)
        view: dict[str, Any] = self.slack.views[-1].view
        return view

    async def edit(
        self, view: dict[str, Any], typed: dict[str, str], user: str = ALICE
    ) -> tuple[int, str]:
        """Submit ``view`` with ``typed`` (by argument name) changed, the rest as prefilled."""
        return await self.post(edit_submission(view, typed, user=user))

    async def settled(self) -> None:
        """Wait for the webhook's background work (the task set decides when, never what)."""
        await until(lambda: not slack_webhook(self.app)._tasks)


def click(
    served: Served, action: str, request: Request, *, user: str, message: SlackMessage
) -> dict[str, Any]:
    """A ``block_actions`` payload for one of the card's buttons, shaped like Slack's."""
    return {
        "type": "block_actions",
        "user": {"id": user, "team_id": TEAM},
        "team": {"id": TEAM},
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "container": {"type": "message", "channel_id": message.channel, "message_ts": message.ts},
        "channel": {"id": message.channel},
        "response_url": served.slack.response_url(uuid.uuid4().hex),
        "actions": [
            {
                "action_id": f"tapgate_{action}",
                "value": request.id,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def edit_submission(
    view: dict[str, Any], typed: dict[str, str], *, user: str = ALICE
) -> dict[str, Any]:
    """A ``view_submission`` of the edit modal: every input as prefilled, ``typed`` changed."""
    values: dict[str, Any] = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        text = typed.get(block["label"]["text"], block["element"].get("initial_value"))
        values[block["block_id"]] = {"value": {"type": "plain_text_input", "value": text}}
    return {
        "type": "view_submission",
        "team": {"id": TEAM},
        "user": {"id": user, "team_id": TEAM},
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "view": {
            "id": f"V{uuid.uuid4().hex[:10].upper()}",
            "type": "modal",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "blocks": view["blocks"],
            "state": {"values": values},
        },
    }


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with FakeSlack() as fake:
        config = parse_config(
            {
                "server": {"heartbeat_interval": 3600, "max_wait": 60},
                "store": {"url": migrated_sqlite_url},
                "agents": [{"name": "ci", "token": TOKEN}],
                "approvers": [
                    {"name": "alice", "slack": ALICE, "slack_team": TEAM, "groups": ["oncall"]},
                    {"name": "bob", "slack": BOB, "slack_team": TEAM, "groups": ["oncall"]},
                    {"name": "carol", "slack": CAROL, "slack_team": TEAM},
                ],
                "channels": {
                    "console": {"enabled": False},
                    "slack": {
                        "bot_token": DEFAULT_BOT_TOKEN,
                        "signing_secret": SECRET,
                        "api_base_url": fake.url,
                        "timeout": 5,
                    },
                },
                "policy": POLICY,
            },
            env={},
        )
        notifier = SlackNotifier(DEFAULT_BOT_TOKEN, api_base_url=fake.url, timeout=5)
        app = build_app(config, notifiers=[notifier])
        async with TestServer(app, host="127.0.0.1") as server:
            yield Served(app=app, url=str(server.make_url("")).rstrip("/"), slack=fake)


DEPLOY = {"env": "staging", "ref": "a1", "replicas": 2, "api_token": API_TOKEN}


async def submit_deploy(served: Served) -> str:
    status, body = await served.api(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": DEPLOY}
    )
    assert status == 201, body
    request_id: str = body["id"]
    return request_id


# -- the modal and the agent's long-poll -------------------------------------------------


async def test_an_edit_in_the_modal_reaches_the_long_polling_agent(served: Served) -> None:
    request_id = await submit_deploy(served)
    request = await served.gate.get_request(request_id)
    poll = asyncio.create_task(served.api("GET", f"/v1/tool-calls/{request_id}?wait=30"))
    view = await served.open_edit(request)

    assert view["callback_id"] == "tapgate_edit"
    labels = {b["label"]["text"]: b for b in view["blocks"] if b["type"] == "input"}
    assert set(labels) == set(DEPLOY)
    assert labels["ref"]["element"]["initial_value"] == "a1"
    assert labels["replicas"]["element"]["initial_value"] == "2"  # JSON for a number
    assert labels["api_token"]["element"]["initial_value"] == MASK  # never the secret
    assert API_TOKEN not in json.dumps(served.slack.views[-1].view)
    assert not poll.done()  # opening the modal decides nothing

    status, body = await served.edit(view, {"ref": "b2", "replicas": "3"})
    assert (status, body) == (200, "")  # an empty 200 closes the modal
    status, answer = await asyncio.wait_for(poll, 10)
    edited = {"env": "staging", "ref": "b2", "replicas": 3, "api_token": API_TOKEN}
    assert status == 200
    assert (answer["decision"], answer["status"], answer["decided_by"]) == (
        "allow",
        "approved",
        "alice",
    )
    assert answer["edited"] is True and answer["arguments"] == edited  # the secret kept
    assert "edited arguments (ref, replicas)" in answer["reason"]

    await served.settled()
    entries = await served.gate.store.audit_log(request_id=request_id)
    decided = next(e for e in entries if e.event == "approved")
    edit = decided.detail["edit"]
    assert edit["proposed"]["digest"] == args_digest(DEPLOY)
    assert edit["edited"]["digest"] == args_digest(edited)
    assert edit["proposed"]["arguments"]["ref"] == "a1"
    assert edit["edited"]["arguments"]["ref"] == "b2"
    assert edit["changed"] == ["ref", "replicas"]
    assert API_TOKEN not in json.dumps([e.detail for e in entries])  # masked in the audit
    assert [e.event for e in entries] == ["requested", "approved"]

    # The approval covers the edited call only: the original, asked again, asks anew.
    status, again = await served.api(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": DEPLOY}
    )
    assert status == 201 and again["id"] != request_id


async def test_an_edit_into_a_denied_shape_is_refused_in_the_modal(served: Served) -> None:
    request = await served.gate.get_request(await submit_deploy(served))
    view = await served.open_edit(request)
    status, body = await served.edit(view, {"env": "prod"})
    assert status == 200
    answer = json.loads(body)
    assert answer["response_action"] == "errors"
    assert "no prod deploys" in answer["errors"]["arg0"]  # shown on the form, modal open

    # Bad JSON, a changed type and a half-kept secret are refused per field.
    status, body = await served.edit(
        view, {"replicas": "three", "api_token": f"{MASK}x", "ref": "ok"}
    )
    errors = json.loads(body)["errors"]
    fields = {b["label"]["text"]: b["block_id"] for b in view["blocks"] if b["type"] == "input"}
    assert errors[fields["replicas"]] == "Not valid JSON."
    assert "hides a secret" in errors[fields["api_token"]]
    status, body = await served.edit(view, {"replicas": '"3"'})
    assert "same type" in json.loads(body)["errors"][fields["replicas"]]
    # An edit whose call goes to other approvers is refused too: alice is not carol.
    status, body = await served.edit(view, {"env": "qa"})
    assert "other approvers" in json.loads(body)["errors"]["arg0"]

    await served.settled()
    current = await served.gate.get_request(request.id)
    assert current.status == "pending" and current.resolved_by is None  # nothing decided
    refusals = [
        e for e in await served.gate.store.audit_log(request_id=request.id) if e.event == "refused"
    ]
    assert [e.detail["edit"]["edited"]["arguments"]["env"] for e in refusals] == ["prod", "qa"]


async def test_a_non_approvers_edit_is_refused_and_decides_nothing(served: Served) -> None:
    request = await served.gate.get_request(await submit_deploy(served))
    view = await served.open_edit(request)  # alice's modal
    message = await served.card(request)
    status, _ = await served.post(click(served, "edit", request, user=CAROL, message=message))
    assert status == 200
    await until(lambda: any(e.user == CAROL for e in served.slack.ephemerals))
    assert len(served.slack.views) == 1  # carol gets no modal, only a sentence
    # A submission by carol anyway (a forged one, or a modal of hers): refused in the modal.
    status, body = await served.edit(view, {"ref": "b2"}, user=CAROL)
    assert "not an approver" in json.loads(body)["errors"]["arg0"]
    await served.settled()
    current = await served.gate.get_request(request.id)
    assert current.status == "pending"
    refusals = [
        e for e in await served.gate.store.audit_log(request_id=request.id) if e.event == "refused"
    ]
    assert {e.actor for e in refusals} == {"carol"}


async def test_a_redelivered_submission_decides_once(served: Served) -> None:
    request = await served.gate.get_request(await submit_deploy(served))
    view = await served.open_edit(request)
    payload = edit_submission(view, {"ref": "b2"})
    answers = await asyncio.gather(served.post(payload), served.post(payload))
    assert [status for status, _ in answers] == [200, 200]
    again = await served.post(payload)  # and once more, after it was decided
    assert again[0] == 200
    await served.settled()
    current = await served.gate.get_request(request.id)
    assert current.status == "approved" and current.edited_arguments is not None
    assert current.edited_arguments["ref"] == "b2"
    decisions = [
        e for e in await served.gate.store.audit_log(request_id=request.id) if e.event == "approved"
    ]
    assert len(decisions) == 1


async def test_an_edit_with_no_change_is_a_plain_approval(served: Served) -> None:
    request = await served.gate.get_request(await submit_deploy(served))
    view = await served.open_edit(request)
    assert (await served.edit(view, {}))[0] == 200
    await served.settled()
    decided = await served.gate.get_request(request.id)
    assert decided.status == "approved" and decided.edited_arguments is None
    decision = decided.decision()
    assert decision is not None and not decision.edited and decision.arguments is None


async def test_questions_and_batch_calls_offer_no_edit(served: Served) -> None:
    status, batch = await served.api(
        "POST",
        "/v1/tool-call-batches",
        {"calls": [{"tool": "deploy", "arguments": {"env": "staging"}}, {"tool": "billing"}]},
    )
    assert status == 201, batch
    await until(lambda: bool(served.slack.messages))
    blocks = json.dumps([m.blocks for m in served.slack.messages.values()])
    assert "tapgate_edit" not in blocks  # batch cards: no Edit (docs/notifications.md)


# -- every agent surface gets the edited call --------------------------------------------


async def test_the_claude_code_hook_answers_with_updated_input(served: Served) -> None:
    for event in ("PreToolUse", "PermissionRequest"):
        tool_input = {"command": "make deploy", "description": "Deploy"}
        raw = json.dumps(
            {
                "session_id": f"s-{event}",
                "hook_event_name": event,
                "tool_name": "Bash",
                "tool_input": tool_input,
                "tool_use_id": "toolu_01",
            }
        )
        hook = asyncio.create_task(
            asyncio.to_thread(claude_code_hook, raw, url=served.url, token=TOKEN, timeout=30)
        )
        request = await served.pending()
        view = await served.open_edit(request)
        assert (await served.edit(view, {"command": "make deploy-staging"}))[0] == 200
        answer = await asyncio.wait_for(hook, 10)
        edited = {"command": "make deploy-staging", "description": "Deploy"}
        out = answer["hookSpecificOutput"]
        if event == "PreToolUse":
            assert out["permissionDecision"] == "allow"
            assert out["updatedInput"] == edited
        else:
            assert out["decision"] == {"behavior": "allow", "updatedInput": edited}
        await served.settled()


async def test_guard_calls_the_tool_with_the_edited_arguments(served: Served) -> None:
    ran: list[dict[str, Any]] = []
    async with RemoteGate(served.url, TOKEN) as gate:

        @guard(gate, tool="deploy")
        async def deploy(env: str, ref: str, replicas: int = 1, api_token: str = "") -> str:
            ran.append({"env": env, "ref": ref, "replicas": replicas})
            return f"{env}@{ref}x{replicas}"

        task = asyncio.create_task(deploy("staging", "a1", replicas=2, api_token=API_TOKEN))
        request = await served.pending()
        view = await served.open_edit(request)
        assert (await served.edit(view, {"ref": "hotfix", "replicas": "4"}))[0] == 200
        assert await asyncio.wait_for(task, 10) == "staging@hotfixx4"
        assert ran == [{"env": "staging", "ref": "hotfix", "replicas": 4}]

        @guard(gate, tool="deploy")
        async def deploy_from(env: str, ref: Path) -> str:  # a Path cannot be rebuilt from JSON
            return "ran"

        task = asyncio.create_task(deploy_from("staging", Path("a1")))
        request = await served.pending()
        view = await served.open_edit(request)
        assert (await served.edit(view, {"ref": "b2"}))[0] == 200
        with pytest.raises(GuardError, match="cannot be rebuilt"):
            await asyncio.wait_for(task, 10)


async def test_tapgate_run_runs_an_exact_edit_and_refuses_any_other(
    served: Served, capfd: pytest.CaptureFixture[str]
) -> None:
    async def run(argv: list[str], edited: str) -> tuple[int, str]:
        err = io.StringIO()
        task = asyncio.create_task(
            asyncio.to_thread(
                run_approved, argv, url=served.url, token=TOKEN, tool="shell", stderr=err
            )
        )
        request = await served.pending()
        view = await served.open_edit(request)
        assert (await served.edit(view, {"command": edited}))[0] == 200
        status = await asyncio.wait_for(task, 10)
        await served.settled()
        return status, err.getvalue()

    status, said = await run(["echo", "original"], "echo hi | cat")
    assert status == EXIT_EDITED
    assert "not an exact command line" in said and "not running anything" in said
    status, said = await run(["echo", "original"], "echo 'edited text'")
    assert status == 0, said
    out = capfd.readouterr().out
    assert "edited text" in out and "original" not in out


async def test_an_edit_stored_before_a_crash_is_replayed_with_its_arguments(
    served: Served,
) -> None:
    """Record before acknowledging: what the inbox keeps carries the judged arguments."""
    request = await served.gate.get_request(await submit_deploy(served))
    view = await served.open_edit(request)
    payload = edit_submission(view, {"ref": "from-the-inbox"})
    parsed = parse_edit_submission(payload)
    assert parsed is not None
    edited = {**DEPLOY, "ref": "from-the-inbox"}
    interaction = dataclasses.replace(parsed[0], edited=edited)
    stored = _slack_inbox.encode(interaction)
    assert _slack_inbox.decode(stored) == dataclasses.replace(interaction, trigger_id=None)
    denying = json.loads(stored) | {"action": "deny"}
    assert _slack_inbox.decode(json.dumps(denying)) is None  # an edit only ever approves

    inbox = served.app[INBOX]
    await inbox.record("slack", [(_slack_inbox.event_id(payload), stored)])  # then the crash
    assert await inbox.replay(received_before=datetime.now(UTC) + timedelta(seconds=1)) == 1
    await served.settled()
    decided = await served.gate.get_request(request.id)
    assert decided.status == "approved" and decided.edited_arguments == edited
    assert (await served.post(payload))[0] == 200  # Slack's own delivery, late: decides nothing
    await served.settled()
    audit = await served.gate.store.audit_log(request_id=request.id)
    assert [e.event for e in audit].count("approved") == 1
    assert await inbox.pending() == 0


async def test_the_event_stream_says_a_result_was_edited_masked(served: Served) -> None:
    events: list[GateEvent] = []
    served.gate.bus.subscribe(events.append)
    request = await served.gate.get_request(await submit_deploy(served))
    view = await served.open_edit(request)
    assert (await served.edit(view, {"ref": "b2"}))[0] == 200
    await until(lambda: any(e.kind == "resolved" for e in events))
    resolved = event_out(next(e for e in events if e.kind == "resolved"))
    assert resolved.edited and resolved.edited_arguments is not None
    assert resolved.edited_arguments["ref"] == "b2"
    assert resolved.edited_arguments["api_token"] == MASK  # the stream may be logged
