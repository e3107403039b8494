"""A refused Teams press whose decision outlasts the answer budget: told "recorded", then redrawn.

Teams waits for an invoke's answer; a press still being decided when the
answer budget runs out is answered with a sentence saying it is recorded,
and its card is redrawn with ``updateActivity`` once the press is applied.
When the press is refused (a non-approver), that redraw is how the presser
learns it: the card as it is (still asking) under the refusal, in the
presser's own chat only, and nothing is decided.

The budget is the webhook's ``budget`` set to zero (the seam the webhook
offers tests), so the answer never waits for the decision: no real 4 s wait.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from tapgate.decisions.buttons import postback_data
from tapgate.decisions.texts import NOT_APPROVER
from tapgate.gate.clock import ManualClock
from tests.channels.teams.served import TeamsServed, address, served_teams
from tests.fakes.served import Client, until
from tests.fakes.teams import FakeTeams, Posted

STRANGER = 9
APPROVERS: list[dict[str, Any]] = [{"name": "alice", "teams": address(1)}]
RULES: list[dict[str, Any]] = [{"tool": "deploy", "action": "ask", "approvers": ["alice"]}]


@pytest.fixture
async def served(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[TeamsServed]:
    async with served_teams(migrated_db_url, clock, aiohttp_client, APPROVERS, RULES) as found:
        await found.install(1)
        found.webhook().budget = 0.0  # every press outlasts it
        yield found


async def test_a_refused_press_past_the_budget_is_told_recorded_then_its_card_shows_why(
    served: TeamsServed,
) -> None:
    request_id = await served.ask("deploy")
    await until(lambda: bool(served.teams.cards_in(1)))
    [alices] = served.teams.cards_in(1)
    # The same card in the stranger's chat (as someone removed from the config since it was
    # sent would still hold it): tapgate itself never sends one to a stranger.
    held = "1:stranger-card"
    chat = FakeTeams.conversation_of(STRANGER)
    served.teams.activities[held] = Posted(conversation_id=chat, versions=[alices.versions[0]])
    press = served.teams.press(STRANGER, postback_data("approve", request_id), replyToId=held)

    status, answer = await served.post(press)  # returns once the late redraw is done

    assert status == 200 and answer["type"] == "application/vnd.microsoft.activity.message"
    assert "recorded" in answer["value"]
    [redraw] = served.teams.requests_to("update")
    assert redraw.path.endswith(f"/v3/conversations/{chat}/activities/{held}")
    stranger_card = served.teams.activities[held]
    assert len(stranger_card.versions) == 2
    shown = stranger_card.text
    assert NOT_APPROVER in shown and '"title": "Approve"' in shown  # still asking, and why not
    assert len(alices.versions) == 1  # the approver's own card is untouched
    request = await served.gate.get_request(request_id)
    assert request.status == "pending" and request.resolved_by is None
    audit = [e.event for e in await served.gate.store.audit_log(request_id=request_id)]
    assert audit.count("refused") == 1 and not {"approved", "denied"} & set(audit), audit
    # Delivered again (the Bot Connector retrying): nothing more is audited or decided.
    again_status, again = await served.post(press)
    assert again_status == 200 and "recorded" in json.dumps(again)
    audit = [e.event for e in await served.gate.store.audit_log(request_id=request_id)]
    assert audit.count("refused") == 1, audit
