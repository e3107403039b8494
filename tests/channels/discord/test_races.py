"""Discord under concurrency: one Revoke, one edited approval, one decision among many approvers.

Discord sends an interaction once, but a proxy or a retrying load balancer
may deliver the same signed bytes many times at once; and many approvers may
press together. Each case goes through the real server 50 times at once and
must leave exactly one change and one audit line behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from tapgate.channels.discord.edits import edit_custom_id
from tapgate.decisions.buttons import deny_reason_postback_data, postback_data
from tapgate.gate.clock import ManualClock
from tests.channels.discord.served import ALICE_D, DiscordServed, serving
from tests.channels.discord.test_commands import command, custom_ids, grant_session
from tests.channels.discord.test_modals import inputs, open_edit
from tests.fakes.served import Client

CROWD = [f"2000000000000000{n:02d}" for n in range(50)]
RULES: list[dict[str, Any]] = [
    {"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]},
    {"tool": "release", "action": "ask", "approvers": ["crowd"]},  # quorum of one
]
DEPLOY = {"env": "staging", "ref": "a1", "replicas": 2}
TIMES = 50


@pytest.fixture
async def served(
    migrated_db_url: str,
    clock: ManualClock,
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> AsyncIterator[DiscordServed]:
    crowd = [
        {"name": f"p{n:02d}", "discord": user, "groups": ["crowd"]} for n, user in enumerate(CROWD)
    ]
    async with serving(
        migrated_db_url, clock, aiohttp_client, RULES, more_approvers=crowd
    ) as found:
        found.receiver.budget = 60.0  # every answer inline: a deferred one would hide its kind
        yield found


async def all_at_once(served: DiscordServed, payloads: list[dict[str, Any]]) -> list[Any]:
    """Post every payload concurrently; the answers, once every decision under way settled."""
    results = await asyncio.gather(*(served.interact(p) for p in payloads))
    await served.receiver.settled()
    assert {status for status, _ in results} == {200}
    return [answer for _, answer in results]


async def audited(served: DiscordServed, event: str, request_id: str | None = None) -> int:
    lines = await served.gate.store.audit_log(request_id=request_id)
    return len([line for line in lines if line.event == event])


async def test_one_revoke_press_delivered_fifty_times_revokes_once(served: DiscordServed) -> None:
    await grant_session(served, ALICE_D, "s-race")
    [revoke] = custom_ids(await command(served, "grants", ALICE_D))
    press = served.signer.press(revoke, ALICE_D)  # the same signed interaction, 50 times
    answers = await all_at_once(served, [press] * TIMES)
    redrawn = [a for a in answers if a["type"] == 7]
    assert len(redrawn) == 1 and "Revoked" in redrawn[0]["data"]["content"]
    assert [a for a in answers if a["type"] != 7] == [{"type": 6}] * (TIMES - 1)
    assert await audited(served, "grant_revoked") == 1
    assert custom_ids(await command(served, "grants", ALICE_D)) == []


async def test_one_edit_submission_delivered_fifty_times_approves_the_edit_once(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy", DEPLOY)
    shown = inputs(await open_edit(served, request_id, ALICE_D))
    typed = {item["custom_id"]: item.get("value", "") for item in shown.values()}
    typed[shown["ref"]["custom_id"]] = "b2"
    submitted = served.signer.submit(edit_custom_id(request_id), ALICE_D, typed)
    answers = await all_at_once(served, [submitted] * TIMES)
    assert len([a for a in answers if a["type"] == 7]) == 1, answers
    # The others: the duplicate acknowledged, or (judged after the decision) told it is decided.
    for answer in (a for a in answers if a["type"] != 7):
        assert answer == {"type": 6} or "already approved" in answer["data"]["content"].lower()
    decided = await served.status(request_id)
    assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
    assert decided["edited"] is True and decided["arguments"] == {**DEPLOY, "ref": "b2"}
    assert await audited(served, "approved", request_id) == 1
    assert await audited(served, "refused", request_id) == 0


async def test_fifty_different_approvers_pressing_at_once_make_one_decision(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("release")
    approve, deny = postback_data("approve", request_id), deny_reason_postback_data(request_id)
    presses = [  # half press Approve, half submit Deny…'s reason
        served.signer.submit(deny, user, {"reason": "no"})
        if n % 2
        else served.signer.press(approve, user)
        for n, user in enumerate(CROWD)
    ]
    answers = await all_at_once(served, presses)
    [decider] = [n for n, a in enumerate(answers) if a["type"] == 7]
    told = [a for a in answers if a["type"] == 4]
    assert len(told) == TIMES - 1 and all(a["data"]["flags"] == 64 for a in told)
    decided = await served.status(request_id)
    status = "denied" if decider % 2 else "approved"
    assert (decided["status"], decided["decided_by"]) == (status, f"p{decider:02d}")
    assert all(f"already {status}" in a["data"]["content"].lower() for a in told), told
    assert await audited(served, status, request_id) == 1
    assert await audited(served, "denied" if status == "approved" else "approved", request_id) == 0
    assert await audited(served, "refused", request_id) == TIMES - 1  # each late press audited
