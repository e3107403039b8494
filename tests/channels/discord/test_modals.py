"""Discord's Edit… and Deny all modals, through the real server, the fake and signed interactions.

Edit… opens a modal with one text input per argument (masked where a
value hides a secret); its submission approves exactly the edited call,
judged by the policy again. Deny all opens a modal for one reason that
denies every open call of the batch. A forged or stale submission is
authorised again and changes nothing.
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.discord.edits import edit_custom_id
from tapgate.decisions.buttons import INBOX_POSTBACK, batch_postback_data, postback_data
from tapgate.decisions.texts import EDIT_IN_WEB_INBOX
from tapgate.gate.batching import read_batch
from tapgate.policy.masking import MASK
from tapgate.server.keys import INBOX
from tests.channels.discord.served import (
    ALICE_D,
    AUTH,
    BOB_D,
    STRANGER_D,
    DiscordServed,
    served_fixture,
)

RULES: list[dict[str, Any]] = [
    {"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]},
    {"tool": "deploy_*", "action": "ask", "approvers": ["alice", "bob"]},
]
API_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
DEPLOY = {"env": "staging", "ref": "a1", "replicas": 2, "api_token": API_TOKEN}


served = served_fixture(RULES, public_url="http://tapgate.test:8080")


def inputs(modal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The modal's text inputs by label."""
    rows = modal["data"]["components"]
    return {row["components"][0]["label"]: row["components"][0] for row in rows}


async def open_edit(served: DiscordServed, request_id: str, user: str) -> dict[str, Any]:
    card = await served.card(user, request_id)
    assert edit_custom_id(request_id) in card.custom_ids
    _, modal = await served.interact(served.signer.press(edit_custom_id(request_id), user))
    assert isinstance(modal, dict)
    return modal


async def test_edit_opens_a_masked_modal_and_its_submission_approves_exactly_the_edit(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy", DEPLOY)
    modal = await open_edit(served, request_id, ALICE_D)
    assert modal["type"] == 9 and modal["data"]["custom_id"] == edit_custom_id(request_id)
    shown = inputs(modal)
    assert set(shown) == set(DEPLOY)
    assert shown["ref"]["value"] == "a1" and shown["replicas"]["value"] == "2"
    assert shown["api_token"]["value"] == MASK and API_TOKEN not in str(modal)
    assert (await served.status(request_id))["status"] == "pending"  # a modal decides nothing
    typed = {item["custom_id"]: item.get("value", "") for item in shown.values()}
    typed[shown["ref"]["custom_id"]] = "b2"
    typed[shown["replicas"]["custom_id"]] = "3"
    _, answer = await served.interact(
        served.signer.submit(edit_custom_id(request_id), ALICE_D, typed)
    )
    assert answer["type"] == 7 and answer["data"]["components"] == []
    decided = await served.status(request_id)
    edited = {**DEPLOY, "ref": "b2", "replicas": 3}  # the secret kept as it was
    assert (decided["status"], decided["decided_by"]) == ("approved", "alice")
    assert decided["edited"] is True and decided["arguments"] == edited
    # The approval covered that call once: the original, asked again, asks anew.
    async with served.client.post(
        "/v1/tool-calls", json={"tool": "deploy", "arguments": DEPLOY}, headers=AUTH
    ) as response:
        assert (await response.json())["status"] == "pending"


async def test_a_refused_edit_is_told_and_nothing_is_stored_or_decided(
    served: DiscordServed,
) -> None:
    request_id = await served.ask("deploy", DEPLOY)
    modal = await open_edit(served, request_id, BOB_D)
    replicas = inputs(modal)["replicas"]["custom_id"]
    token = inputs(modal)["api_token"]["custom_id"]
    for typed in ({replicas: "three"}, {token: MASK + "x"}):
        submitted = served.signer.submit(edit_custom_id(request_id), BOB_D, typed)
        _, answer = await served.interact(submitted)
        assert answer["type"] == 4 and answer["data"]["flags"] == 64
        assert "Press Edit… again" in answer["data"]["content"]
    assert await served.app[INBOX].pending() == 0
    assert (await served.status(request_id))["status"] == "pending"


async def test_a_forged_or_stale_edit_submission_changes_nothing(served: DiscordServed) -> None:
    request_id = await served.ask("deploy", DEPLOY)
    forged = served.signer.submit(edit_custom_id(request_id), STRANGER_D, {"arg1": "evil"})
    _, answer = await served.interact(forged)
    assert answer["type"] == 4 and "not an approver" in answer["data"]["content"]
    _, opened = await served.interact(served.signer.press(edit_custom_id(request_id), STRANGER_D))
    assert opened["type"] == 4  # no modal for a stranger either
    card = await served.card(ALICE_D, request_id)
    press = served.signer.press(postback_data("deny", request_id), ALICE_D, message=card)
    modal = (await served.interact(press))[1]
    denied = served.signer.submit(modal["data"]["custom_id"], ALICE_D, {"reason": "no"})
    assert (await served.interact(denied))[1]["type"] == 7
    stale = served.signer.submit(edit_custom_id(request_id), BOB_D, {"arg1": "b2"})
    _, answer = await served.interact(stale)  # an edit modal left open meanwhile
    assert answer["type"] == 4 and "already denied" in answer["data"]["content"].lower()
    decided = await served.status(request_id)
    assert (decided["status"], decided["decided_by"]) == ("denied", "alice")
    assert not decided.get("edited")
    request = await served.gate.get_request(request_id)
    assert request.edited_arguments is None and request.arguments == DEPLOY


async def test_a_call_with_more_arguments_than_a_modal_holds_is_edited_in_the_inbox(
    served: DiscordServed,
) -> None:
    arguments = {f"k{n}": f"v{n}" for n in range(6)}
    request_id = await served.ask("deploy", arguments)
    card = await served.card(ALICE_D, request_id)
    assert edit_custom_id(request_id) not in card.custom_ids
    buttons = [b for row in card.body["components"] for b in row["components"]]
    assert any(
        b.get("custom_id") == INBOX_POSTBACK and b["label"] == "Edit in inbox" for b in buttons
    )
    _, answer = await served.interact(served.signer.press(edit_custom_id(request_id), ALICE_D))
    assert answer["type"] == 4 and answer["data"]["content"] == EDIT_IN_WEB_INBOX


async def test_deny_all_asks_for_a_reason_and_denies_every_open_call_with_it(
    served: DiscordServed,
) -> None:
    calls = [{"tool": "deploy", "arguments": {"n": n}} for n in range(3)]
    async with served.client.post(
        "/v1/tool-call-batches", json={"calls": calls}, headers=AUTH
    ) as response:
        batch = await response.json()
        assert response.status == 201, batch
    batch_id = batch["batch_id"] if "batch_id" in batch else batch["id"]
    card = await served.card(ALICE_D, batch_id)
    deny_all = batch_postback_data("deny_all", batch_id)
    assert INBOX_POSTBACK in card.custom_ids
    _, modal = await served.interact(served.signer.press(deny_all, ALICE_D, message=card))
    assert modal["type"] == 9 and modal["data"]["custom_id"] == deny_all
    state = await read_batch(served.gate, batch_id)
    assert {r.status for r in state.requests.values()} == {"pending"}
    # A stranger's forged submission: refused for every call, nothing changes.
    forged = served.signer.submit(deny_all, STRANGER_D, {"reason": "x"})
    _, answer = await served.interact(forged)
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    _, opened = await served.interact(served.signer.press(deny_all, STRANGER_D))
    assert opened["type"] == 4  # no modal for a stranger
    submitted = served.signer.submit(deny_all, ALICE_D, {"reason": "frozen @here"}, message=card)
    _, answer = await served.interact(submitted)
    assert answer["type"] == 7 and answer["data"]["components"] == []
    state = await read_batch(served.gate, batch_id)
    decided = list(state.requests.values())
    assert {r.status for r in decided} == {"denied"}
    assert {r.resolution_reason for r in decided} == {"frozen @here"}
    assert {r.resolved_by for r in decided} == {"alice"}
    # Submitted again later (stale): nothing more happens.
    again = served.signer.submit(deny_all, BOB_D, {"reason": "late"})
    _, answer = await served.interact(again)
    assert answer["type"] == 4
    state = await read_batch(served.gate, batch_id)
    assert {r.resolution_reason for r in state.requests.values()} == {"frozen @here"}
