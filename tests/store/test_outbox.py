"""The outbox: leased claims, finishing under a lease, skipping decided requests."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Delivery
from tapgate.store import Store
from tests.factories import make_request
from tests.tables import outbox_rows

ALICE = Delivery(approver="alice", channel="slack", address="UA")
BOB = Delivery(approver="bob", channel="line", address="UB")


async def test_claim_leases_and_counts_attempts(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now())
    await store.create_request(req, [ALICE, BOB], clock.now())
    items = await store.outbox.claim(clock.now(), owner="d1", lease=30)
    assert [(i.delivery.approver, i.attempts) for i in items] == [("alice", 1), ("bob", 1)]
    assert items[0].request == req
    assert await store.outbox.claim(clock.now(), owner="d2") == []  # leased
    clock.advance(31)  # d1 died: its lease ran out
    again = await store.outbox.claim(clock.now(), owner="d2")
    assert [(i.delivery.approver, i.attempts) for i in again] == [("alice", 2), ("bob", 2)]
    # d1 comes back and tries to finish: it lost the lease, nothing changes.
    assert not await store.outbox.mark_sent(items[0].id, owner="d1", receipt={}, now=clock.now())
    assert await store.outbox.mark_sent(
        again[0].id, owner="d2", receipt={"ts": "1"}, now=clock.now()
    )
    [sent, pending] = await outbox_rows(store, req.id)
    assert (sent.status, sent.receipt) == ("sent", {"ts": "1"})
    assert pending.status == "pending"


async def test_claim_filters_channels(store: Store, clock: ManualClock) -> None:
    await store.create_request(make_request(clock.now()), [ALICE, BOB], clock.now())
    items = await store.outbox.claim(clock.now(), owner="d", channels=["line"])
    assert [i.delivery.channel for i in items] == ["line"]


async def test_concurrent_claims_never_share_a_row(store: Store, clock: ManualClock) -> None:
    for i in range(20):
        await store.create_request(
            make_request(clock.now(), arguments={"i": i}), [ALICE], clock.now()
        )
    claims = await asyncio.gather(
        *(store.outbox.claim(clock.now(), owner=f"d{n}", limit=3) for n in range(10))
    )
    ids = [item.id for claim in claims for item in claim]
    assert len(ids) == len(set(ids)) == 20


async def test_retry_waits_until_its_time(store: Store, clock: ManualClock) -> None:
    await store.create_request(make_request(clock.now()), [ALICE], clock.now())
    [item] = await store.outbox.claim(clock.now(), owner="d")
    await store.outbox.mark_retry(
        item.id, owner="d", error="503", now=clock.now(), at=clock.now() + timedelta(seconds=10)
    )
    assert await store.outbox.claim(clock.now(), owner="d") == []
    assert await store.outbox.next_due() == clock.now() + timedelta(seconds=10)
    clock.advance(10)
    [again] = await store.outbox.claim(clock.now(), owner="d")
    assert (again.attempts, again.last_error) == (2, "503")


async def test_next_due_waits_for_a_lease_held_elsewhere(store: Store, clock: ManualClock) -> None:
    """A row another dispatcher leased is claimable when its lease ends, not before."""
    await store.create_request(make_request(clock.now()), [ALICE], clock.now())
    [_] = await store.outbox.claim(clock.now(), owner="other", lease=60)
    clock.advance(5)
    assert await store.outbox.claim(clock.now(), owner="me") == []
    assert await store.outbox.next_due() == clock.now() + timedelta(seconds=55)


async def test_next_due_only_for_the_channels_served(store: Store, clock: ManualClock) -> None:
    """Pending LINE rows must not wake a dispatcher that serves Slack alone."""
    await store.create_request(make_request(clock.now()), [BOB], clock.now())
    assert await store.outbox.next_due(["slack"]) is None
    assert await store.outbox.next_due(["line"]) == clock.now()
    assert await store.outbox.next_due() == clock.now()


async def test_rows_of_an_overdue_request_are_cancelled_not_sent(
    store: Store, clock: ManualClock
) -> None:
    """Past its deadline but not yet swept: nobody can approve it, so no message goes out."""
    request = make_request(clock.now(), ttl=60)
    await store.create_request(request, [ALICE], clock.now())
    clock.advance(61)
    assert await store.outbox.claim(clock.now(), owner="d") == []
    [row] = await outbox_rows(store, request.id)
    assert row.status == "cancelled"
    assert not await store.queue_reminder(request, [ALICE], clock.now())


async def test_failed_rows_are_never_claimed(store: Store, clock: ManualClock) -> None:
    await store.create_request(make_request(clock.now()), [ALICE], clock.now())
    [item] = await store.outbox.claim(clock.now(), owner="d")
    assert await store.outbox.mark_failed(item.id, owner="d", error="quota", now=clock.now())
    clock.advance(3600)
    assert await store.outbox.claim(clock.now(), owner="d") == []
    [row] = await outbox_rows(store, item.request.id)
    assert (row.status, row.last_error) == ("failed", "quota")


async def test_rows_of_decided_requests_are_cancelled_not_sent(
    store: Store, clock: ManualClock
) -> None:
    req = make_request(clock.now())
    await store.create_request(req, [ALICE, BOB], clock.now())
    await store.transition(req.id, to="approved", by="alice", now=clock.now())
    assert await store.outbox.claim(clock.now(), owner="d") == []
    assert {r.status for r in await outbox_rows(store, req.id)} == {"cancelled"}


async def test_stale_lists_sent_messages_of_decided_requests(
    store: Store, clock: ManualClock
) -> None:
    req = make_request(clock.now())
    await store.create_request(req, [ALICE, BOB], clock.now())
    items = await store.outbox.claim(clock.now(), owner="d")
    for item in items:
        await store.outbox.mark_sent(item.id, owner="d", receipt={"n": item.id}, now=clock.now())
    assert await store.outbox.stale(channels=["slack"]) == []  # still pending
    await store.transition(req.id, to="denied", by="bob", now=clock.now())
    [stale] = await store.outbox.stale(channels=["slack"])
    assert stale.delivery.channel == "slack" and stale.request.status == "denied"
    await store.outbox.mark_updated(stale.id, status="denied", now=clock.now())
    assert await store.outbox.stale(channels=["slack"]) == []
