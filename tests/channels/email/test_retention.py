"""Retention: review links and outcome claims are forgotten a day after they end, not kept forever.

On SQLite and PostgreSQL, with a manual clock. A link's row goes a day
after its request ended; the request's outcome claim (one outcome mail per
address) goes with the last of its links, once it is a day old too, so a
late update never finds it gone while a link can still be opened. A link
whose rows are gone answers a clear 404 on GET, HEAD and POST, never a 500.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from tapgate.decisions.review_links import LINK_MEMORY, LINK_UNKNOWN, ReviewLinks, forget_ended
from tapgate.gate import Approver, Directory, Gate
from tapgate.gate.clock import ManualClock
from tapgate.policy import Policy, PolicySpec
from tapgate.store import Store
from tests.channels.email.harness import ALICE, BOB, Served, answer, page, post, serving

DAY = LINK_MEMORY.total_seconds()
A = "a@x.test"


@pytest.fixture
async def links(store: Store, clock: ManualClock) -> ReviewLinks:
    directory = Directory([Approver(name="alice", addresses=(("email", A),))], ("email",))
    gate = Gate(store=store, policy=Policy(PolicySpec(rules=())), directory=directory, clock=clock)
    return ReviewLinks(gate, channel="email")


async def mint(links: ReviewLinks, subject: str, ends_in: timedelta) -> str:
    expires_at = links.gate.clock.now() + ends_in
    minted = await links.mint(
        subject, batch=False, approver="alice", address=A, key=subject, expires_at=expires_at
    )
    return minted.token


async def test_links_and_outcome_claims_are_forgotten_a_day_after_they_end(
    links: ReviewLinks, clock: ManualClock
) -> None:
    short = await mint(links, "r-short", timedelta(minutes=10))
    long = await mint(links, "r-long", timedelta(days=3))
    for subject in ("r-short", "r-long"):
        assert await links.claim_outcome(subject, A)  # decided now: the outcome mail is told
    clock.advance(DAY)  # the short link ended 23 h 50 min ago, its outcome is a day old
    assert await forget_ended(links.gate) == 0
    assert not await links.claim_outcome("r-short", A)  # still told: nothing sent twice
    clock.advance(601)  # the short link ended a day ago
    assert await forget_ended(links.gate) == 2  # its link and its outcome claim
    assert await links.open(short) is None
    kept = await links.open(long)
    assert kept is not None and kept.state == "open"
    assert not await links.claim_outcome("r-long", A)  # a kept link keeps its outcome told
    clock.advance(3 * DAY)
    assert await forget_ended(links.gate) == 2
    assert await links.open(long) is None
    assert await forget_ended(links.gate) == 0


async def test_a_fresh_outcome_claim_outlives_its_forgotten_links(
    links: ReviewLinks, clock: ManualClock
) -> None:
    await mint(links, "r1", timedelta(minutes=1))
    clock.advance(DAY + 120)  # the link ended more than a day ago
    assert await links.claim_outcome("r1", A)  # a late update (a slow retry) tells it now
    assert await forget_ended(links.gate) == 1  # the link only: the claim is minutes old
    assert not await links.claim_outcome("r1", A)
    clock.advance(DAY + 1)
    assert await forget_ended(links.gate) == 1
    assert await links.claim_outcome("r1", A)  # gone: the row is free again


@pytest.fixture
async def served(migrated_db_url: str) -> AsyncIterator[Served]:
    async with serving(migrated_db_url) as found:
        yield found


async def test_a_forgotten_link_answers_clearly_on_get_head_and_post(served: Served) -> None:
    request_id = await served.ask("deploy")  # oncall: alice and bob, a 600 s timeout
    alice, bob = await served.link(ALICE), await served.link(BOB)
    _, _, fields = await page(bob)
    assert (await answer(alice, "approve"))[0] == 200
    await served.mails_to(BOB, 2)  # the outcome mail: its claim is stored
    audit = await served.gate.audit_log(request_id=request_id)
    served.clock.advance(600 + DAY + 1)  # the links ended a day ago, the claims are as old
    # What the leading replica's beat does (tests/server/test_heartbeat.py): called directly, as
    # on PostgreSQL the beat this test would start can find the background one holding the lead.
    await forget_ended(served.gate)
    for link in (alice, bob):
        for method in ("GET", "HEAD"):
            status, text, _ = await page(link, method)
            assert status == 404
            assert method == "HEAD" or LINK_UNKNOWN in text
        for path in (link, link + "/edit"):
            status, text = await post(path, {**fields, "action": "approve"})
            assert status == 404 and "not valid" in text
    assert await ReviewLinks(served.gate, channel="email").claim_outcome(request_id, BOB)
    assert (await served.gate.get_request(request_id)).status == "approved"
    assert await served.gate.audit_log(request_id=request_id) == audit  # nothing more written
