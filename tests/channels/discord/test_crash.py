"""A Discord press is never lost to a crash, with real ``tapgate serve`` processes.

The test-only apply delay holds the decision after the interaction is
stored; Discord gets its answer in time (a deferred update, type 6, as for
any decision slower than the budget). The server is SIGKILLed in that gap;
another server on the same SQLite file replays the stored press: the agent
gets the decision, the audit holds exactly one, the inbox is empty, and the
card in Discord is edited to the outcome.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from tapgate.decisions.buttons import postback_data
from tapgate.server.test_hooks import APPLY_DELAY_VARIABLE
from tests.e2e.test_inbox_crash import decisions_in_audit, inbox_rows, long_poll, stop_all
from tests.e2e.test_replica_failures import status_of, until
from tests.fakes import FakeLine
from tests.fakes.discord_api import APPLICATION_ID, BOT_TOKEN, FakeDiscord, Signer
from tests.replicas import LINE_TOKEN, ask, start_replica

ALICE_D = "100000000000000001"
DELAY = {APPLY_DELAY_VARIABLE: "60"}


async def test_a_discord_press_killed_between_ack_and_apply_is_applied_once_on_restart(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'tapgate.db'}"
    signer = Signer()
    async with (
        FakeLine(access_token=LINE_TOKEN) as line,
        FakeDiscord() as discord,
        aiohttp.ClientSession() as session,
    ):
        section = (
            f"discord: {{application_id: '{APPLICATION_ID}', public_key: '{signer.public_key}', "
            f"bot_token: '{BOT_TOKEN}', api_base_url: '{discord.url}'}}"
        )
        approver = f"discord: '{ALICE_D}'"
        a = await start_replica(
            tmp_path, "a", db_url, line.url, env=DELAY, channels=section, approver=approver
        )
        replicas = [a]
        try:
            rid = await ask(session, a.url, 1)
            await until(lambda: bool(discord.cards_to(ALICE_D)), 10, "the card on Discord")
            card = discord.cards_to(ALICE_D)[0]
            body = json.dumps(
                signer.press(postback_data("approve", rid), ALICE_D, message=card)
            ).encode()
            async with session.post(
                a.url + "/webhooks/discord", data=body, headers=signer.headers(body)
            ) as response:
                assert response.status == 200
                assert await response.json() == {"type": 6}  # answered in time, decided later
            assert (await status_of(session, a, rid))["status"] == "pending"
            assert await inbox_rows(db_url) == 1  # acknowledged, stored, not yet applied
            await a.kill()

            b = await start_replica(
                tmp_path, "b", db_url, line.url, channels=section, approver=approver
            )
            replicas.append(b)
            decided = await long_poll(session, b, rid)
            assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
            assert await decisions_in_audit(db_url, rid) == ["approved"]
            assert await inbox_rows(db_url) == 0
            await until(lambda: "Approved by alice" in card.text, 10, "the card edited")
        finally:
            await stop_all(*replicas)
