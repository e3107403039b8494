"""A Teams press is never lost to a crash, with real ``tapgate serve`` processes.

As for LINE, Slack, Telegram and Discord: the test-only apply delay holds the
decision after the press is stored. Teams waits for an invoke's answer, so
the press is answered once the answer budget runs out (a sentence saying it
is recorded) and the decision is still to come; the server is SIGKILLed in
that gap, another starts on the same SQLite file and replays the stored
press: the waiting agent gets the decision, the audit holds exactly one,
the inbox is empty, and the pressed card is redrawn to the outcome. The Bot
Connector retrying the same activity, and a second press, change nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import aiohttp

from tapgate.decisions.buttons import postback_data
from tapgate.server.test_hooks import APPLY_DELAY_VARIABLE
from tests.e2e.test_inbox_crash import decisions_in_audit, inbox_rows, long_poll, stop_all
from tests.e2e.test_replica_failures import status_of, until
from tests.fakes import FakeLine
from tests.fakes.teams import TENANT, FakeTeams, oid
from tests.replicas import LINE_TOKEN, Replica, ask, start_replica

DELAY = {APPLY_DELAY_VARIABLE: "60"}  # far longer than the test needs: the kill comes first


async def post(
    session: aiohttp.ClientSession, replica: Replica, teams: FakeTeams, activity: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """POST ``activity`` to the replica as the Bot Connector would (a token signed now)."""
    body = json.dumps(activity).encode()
    headers = teams.headers(teams.sign(now=time.time()))
    async with session.post(replica.url + "/webhooks/teams", data=body, headers=headers) as r:
        return r.status, await r.json()


async def test_a_teams_press_killed_between_ack_and_apply_is_applied_once_on_restart(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'tapgate.db'}"
    async with (
        FakeLine(access_token=LINE_TOKEN) as line,
        FakeTeams() as teams,
        aiohttp.ClientSession() as session,
    ):
        settings = teams.settings()
        section = "teams: {" + ", ".join(f"{k}: '{v}'" for k, v in settings.items()) + "}"
        approver = f"teams: '{TENANT}/{oid(1)}'"

        async def replica(name: str, env: dict[str, str] | None = None) -> Replica:
            return await start_replica(
                tmp_path, name, db_url, line.url, env=env, channels=section, approver=approver
            )

        a = await replica("a", DELAY)
        replicas = [a]
        try:
            assert (await post(session, a, teams, teams.installed(1)))[0] == 200
            rid = await ask(session, a.url, 1)
            await until(lambda: bool(teams.cards_in(1)), 10, "the card in Teams")
            [(card_id, card)] = [(k, v) for k, v in teams.activities.items()]
            press = teams.press(1, postback_data("approve", rid), replyToId=card_id)
            status, answer = await post(session, a, teams, press)
            assert status == 200 and answer["type"] == "application/vnd.microsoft.activity.message"
            assert "recorded" in answer["value"]  # answered within Teams' window, not decided
            assert (await status_of(session, a, rid))["status"] == "pending"
            assert await inbox_rows(db_url) == 1  # acknowledged, stored, not yet applied
            await a.kill()
            assert a.proc.returncode == -9

            b = await replica("b")
            replicas.append(b)
            decided = await long_poll(session, b, rid)
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
            assert await decisions_in_audit(db_url, rid) == ["approved"]
            assert await inbox_rows(db_url) == 0
            await until(lambda: "Approved by alice" in card.text, 10, "the card redrawn")
            assert "actions" not in card.card

            # The Bot Connector retrying the same activity: answered with the card, no decision.
            status, again = await post(session, b, teams, press)
            assert status == 200 and "Approved by alice" in json.dumps(again["value"])
            assert await decisions_in_audit(db_url, rid) == ["approved"]
        finally:
            await stop_all(*replicas)
