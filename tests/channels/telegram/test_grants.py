"""Always and Allow for session pressed on Telegram: grants, /grants, Revoke, a forged Revoke.

Through the real server: the press makes the grant, the agent's next
identical call is allowed without a card, ``/grants`` lists the presser's
grants with a Revoke button each, a Revoke press removes one (the call is
asked again), and a Revoke press carrying someone else's grant is refused,
audited, and changes nothing.
"""

from __future__ import annotations

from typing import Any

from tests.channels.telegram.served import ALICE, AUTH, BOB, Served
from tests.fakes.telegram import TelegramMessage


async def call(served: Served, tool: str) -> dict[str, Any]:
    """The agent asks ``tool`` again with the same arguments and session: the answer."""
    body = {"tool": tool, "arguments": {"env": "prod"}, "session": "s-1"}
    async with served.client.post("/v1/tool-calls", json=body, headers=AUTH) as response:
        answer: dict[str, Any] = await response.json()
        return answer


async def granted(served: Served) -> TelegramMessage:
    """alice approves ``deploy`` Always and ``mine`` for the session; her /grants listing."""
    first = await served.ask("deploy")
    await served.press(ALICE, await served.card(ALICE, first), "Always allow")
    second = await served.ask("mine")
    await served.press(ALICE, await served.card(ALICE, second), "Allow for session")
    assert (await served.gate.get_request(first)).scope == "always"
    assert (await served.gate.get_request(second)).scope == "session"
    listing = await served.say(ALICE, "/grants")
    assert listing is not None
    return listing


def revoke_label(listing: TelegramMessage, tool: str) -> str:
    """The Revoke button of the listed grant that covers ``tool``."""
    for line in listing.shown.splitlines():
        number, _, rest = line.partition(". ")
        if number.isdigit() and tool in rest:
            return f"Revoke {number}"
    raise AssertionError(f"no grant for {tool} in {listing.shown!r}")


async def test_always_and_session_grants_let_the_next_identical_call_through(
    served: Served,
) -> None:
    await granted(served)
    cards_before = len(served.telegram.requests_to("sendMessage"))
    for tool, scope in (("deploy", "always"), ("mine", "session")):
        answer = await call(served, tool)
        assert answer["status"] == "allowed", answer
        assert f"{scope} grant from alice" in answer["reason"]
    assert len(served.telegram.requests_to("sendMessage")) == cards_before  # nobody was asked


async def test_grants_lists_both_and_a_revoke_press_removes_one(served: Served) -> None:
    listing = await granted(served)
    assert "2" in listing.shown and "deploy" in listing.shown and "mine" in listing.shown
    assert {b["text"] for row in listing.keyboard for b in row} == {"Revoke 1", "Revoke 2"}
    await served.press(ALICE, listing, revoke_label(listing, "deploy"))
    told = served.telegram.in_chat(ALICE)[-1]
    assert "Revoked" in told.shown and "mine" in told.shown  # what is left, listed again
    assert (await call(served, "deploy"))["status"] == "pending"  # asked again
    assert (await call(served, "mine"))["status"] == "allowed"


async def test_a_forged_revoke_of_another_approvers_grant_is_refused_and_audited(
    served: Served,
) -> None:
    listing = await granted(served)
    forged = listing.data(revoke_label(listing, "deploy"))  # alice's grant, pressed by bob
    bobs = (await served.say(BOB, "/grants")) or listing
    await served.deliver(await served.telegram.press(BOB, bobs, forged))
    told = served.telegram.in_chat(BOB)[-1]
    assert told.shown == "Only the approver who made a grant can revoke it from the chat."
    assert (await call(served, "deploy"))["status"] == "allowed"  # the grant stands
    audit = await served.gate.store.audit_log()
    assert any(e.event == "refused" and e.actor == "bob" for e in audit)
