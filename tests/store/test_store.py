"""The store: lifecycle compare-and-set, dedup, expiry, grants, audit, migrations."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from tapgate.errors import RequestNotFound, StoreError
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Delivery, Grant, Request
from tapgate.store import GrantKey, Store, normalize_url
from tapgate.store.engine import current_revision, head_revision
from tests.factories import make_request

ALICE = Delivery(approver="alice", channel="console", address="alice")


async def test_create_reuses_identical_pending_request(store: Store, clock: ManualClock) -> None:
    first = make_request(clock.now())
    created = await store.create_request(first, [ALICE], clock.now())
    again = await store.create_request(make_request(clock.now()), [ALICE], clock.now())
    assert created.created and not again.created
    assert again.request is not None
    assert again.request.id == first.id
    other_session = make_request(clock.now(), session="s2")
    assert (await store.create_request(other_session, [], clock.now())).created


async def test_concurrent_identical_asks_create_one_request(
    store: Store, clock: ManualClock
) -> None:
    results = await asyncio.gather(
        *(store.create_request(make_request(clock.now()), [ALICE], clock.now()) for _ in range(20))
    )
    assert sum(r.created for r in results) == 1
    assert all(r.request is not None for r in results)
    assert len({r.request.id for r in results if r.request is not None}) == 1


async def test_overdue_identical_request_is_expired_and_replaced(
    store: Store, clock: ManualClock
) -> None:
    old = make_request(clock.now(), ttl=10)
    await store.create_request(old, [], clock.now())
    clock.advance(11)
    created = await store.create_request(make_request(clock.now()), [], clock.now())
    assert created.created
    assert [r.id for r in created.expired] == [old.id]
    assert (await store.get_request(old.id)).status == "expired"


async def test_transition_is_compare_and_set(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now())
    await store.create_request(req, [], clock.now())
    won = await store.transition(req.id, to="approved", by="alice", now=clock.now())
    lost = await store.transition(req.id, to="denied", by="bob", now=clock.now())
    assert won.outcome == "applied" and won.request and won.request.status == "approved"
    assert lost.outcome == "final" and lost.request and lost.request.status == "approved"
    assert lost.request.resolved_by == "alice"
    events = [(e.event, e.actor) for e in await store.audit_log(request_id=req.id)]
    assert events == [("requested", "agent-1"), ("approved", "alice"), ("refused", "bob")]


async def test_transition_remembers_its_webhook_event(store: Store, clock: ManualClock) -> None:
    """A redelivered event decides nothing, on any request; the first one decided once."""
    one, two = make_request(clock.now(), session="a"), make_request(clock.now(), session="b")
    for request in (one, two):
        await store.create_request(request, [], clock.now())
    event = ("line", "01HEVENT")
    first = await store.transition(one.id, to="approved", by="alice", now=clock.now(), event=event)
    again = await store.transition(one.id, to="denied", by="alice", now=clock.now(), event=event)
    other = await store.transition(two.id, to="denied", by="alice", now=clock.now(), event=event)
    assert (first.outcome, again.outcome, other.outcome) == ("applied", "duplicate", "duplicate")
    assert (await store.get_request(two.id)).status == "pending"
    assert await store.remember_event("slack", "01HEVENT", clock.now())  # per platform


async def test_a_reason_with_nul_is_stored_on_every_backend(
    store: Store, clock: ManualClock
) -> None:
    """Typed answers come from chat apps; PostgreSQL cannot store NUL, so it is replaced."""
    req = make_request(clock.now())
    await store.create_request(req, [], clock.now())
    done = await store.transition(
        req.id, to="approved", by="alice", now=clock.now(), reason="a\x00b"
    )
    assert done.outcome == "applied"
    assert (await store.get_request(req.id)).resolution_reason == "a\ufffdb"


async def test_resolve_after_deadline_expires_instead(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now(), ttl=30)
    await store.create_request(req, [ALICE], clock.now())
    clock.advance(30)  # expires_at is exclusive: at the deadline it is over
    result = await store.transition(req.id, to="approved", by="alice", now=clock.now())
    assert result.outcome == "expired"
    assert result.request is not None and result.request.status == "expired"
    assert result.request.resolved_by == "timeout"


async def test_terminal_states_are_final(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now())
    await store.create_request(req, [], clock.now())
    await store.transition(req.id, to="cancelled", by="agent-1", now=clock.now())
    for to in ("approved", "denied", "cancelled"):
        result = await store.transition(req.id, to=to, by="alice", now=clock.now())
        assert result.outcome == "final"
    clock.advance(3600)
    assert await store.expire_overdue(clock.now()) == []
    assert (await store.get_request(req.id)).status == "cancelled"


async def test_unknown_request(store: Store, clock: ManualClock) -> None:
    with pytest.raises(RequestNotFound):
        await store.get_request("nope")
    missing = await store.transition("nope", to="approved", by="alice", now=clock.now())
    assert missing.outcome == "missing" and missing.request is None


async def test_expire_overdue_only_touches_overdue(store: Store, clock: ManualClock) -> None:
    short = make_request(clock.now(), ttl=10, tool="a")
    long = make_request(clock.now(), ttl=100, tool="b")
    for r in (short, long):
        await store.create_request(r, [ALICE], clock.now())
    clock.advance(50)
    assert [r.id for r in await store.expire_overdue(clock.now())] == [short.id]
    assert (await store.get_request(long.id)).status == "pending"


async def test_outbox_rows_commit_with_the_request(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now())
    await store.create_request(
        req, [ALICE, Delivery(approver="bob", channel="line", address="U1")], clock.now()
    )
    query = text("SELECT approver, channel, address, status, retry_key FROM outbox ORDER BY id")
    rows = await store.run(lambda c: c.execute(query).all())
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("alice", "console", "alice", "pending"),
        ("bob", "line", "U1", "pending"),
    ]
    assert len({r[4] for r in rows}) == 2  # one retry key per message


async def test_grants_scoping_and_revocation(store: Store, clock: ManualClock) -> None:
    now = clock.now()
    session = Grant(
        id="g1",
        scope="session",
        agent="a",
        session="s1",
        tool="t",
        fingerprint="f",
        created_at=now,
        created_by="alice",
    )
    always = Grant(
        id="g2",
        scope="always",
        agent="a",
        session=None,
        tool="u",
        fingerprint="f",
        created_at=now,
        created_by="alice",
        expires_at=now + timedelta(seconds=60),
    )
    for grant in (session, always):  # made the one way tapgate makes them: with an approval
        asked = make_request(now, agent="a", session=grant.session, tool=grant.tool)
        await store.create_request(asked, [], now)

        def granting(_: Request, g: Grant = grant) -> Grant:
            return g

        approved = await store.transition(
            asked.id, to="approved", by="alice", now=now, grant=granting
        )
        assert approved.outcome == "applied"

    async def find(agent: str, session: str | None, tool: str) -> str | None:
        """The grant an identical ask would be answered with (none: a request is created)."""
        key = GrantKey(agent=agent, session=session, tool=tool, fingerprint="f")
        asked = make_request(clock.now(), agent=agent, session=session, tool=tool)
        created = await store.create_request(asked, [], clock.now(), key)
        return created.grant.id if created.grant else None

    assert await find("a", "s1", "t") == "g1"
    assert await find("a", "s2", "t") is None  # other session
    assert await find("b", "s1", "t") is None  # other agent
    assert await find("a", None, "t") is None  # no session at all
    assert await find("a", None, "u") == "g2"
    clock.advance(61)
    assert await find("a", None, "u") is None  # expired
    assert await store.revoke_grant("g1", by="ops", now=clock.now())
    assert not await store.revoke_grant("g1", by="ops", now=clock.now())
    assert await find("a", "s1", "t") is None
    assert [g.id for g in await store.list_grants(active_at=clock.now())] == []
    assert {g.id for g in await store.list_grants()} == {"g1", "g2"}


async def test_audit_log_is_append_only(store: Store, clock: ManualClock) -> None:
    await store.record("note", request_id=None, actor="ops", now=clock.now())
    for statement in ("UPDATE audit SET actor = 'mallory'", "DELETE FROM audit"):

        def tamper(c: Connection, s: str = statement) -> object:
            return c.execute(text(s))

        with pytest.raises(DBAPIError, match="append-only"):
            await store.run(tamper)
    # The chain's genesis row (migration 0003) comes first.
    assert [e.actor for e in await store.audit_log()] == ["tapgate", "ops"]


async def test_migrations_are_at_head_and_idempotent(db_url: str) -> None:
    async with await Store.open(db_url) as first:
        assert await first.is_current()
        assert await first.run(current_revision) == head_revision()
    async with await Store.open(db_url) as second:  # upgrading again is a no-op
        assert await second.is_current()


async def test_the_revisions_read_without_alembic_are_alembics(db_url: str) -> None:
    """``head_revision`` and ``current_revision`` skip Alembic (start-up): same answers."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from tapgate.store.engine import _alembic_config

    assert head_revision() == ScriptDirectory.from_config(_alembic_config()).get_current_head()

    def both(c: Connection) -> tuple[str | None, str | None]:
        return current_revision(c), MigrationContext.configure(c).get_current_revision()

    async with await Store.open(db_url, migrate=False) as empty:
        assert await empty.run(both) == (None, None)
    async with await Store.open(db_url) as migrated:
        assert await migrated.run(both) == (head_revision(), head_revision())


async def test_unmigrated_database_is_not_current(db_url: str) -> None:
    async with await Store.open(db_url, migrate=False) as store:
        assert not await store.is_current()


async def test_restart_sees_pending_requests(db_url: str, clock: ManualClock) -> None:
    req = make_request(clock.now())
    async with await Store.open(db_url) as store:
        await store.create_request(req, [ALICE], clock.now())
    async with await Store.open(db_url) as store:
        again = await store.get_request(req.id)
    assert again == req


def test_normalize_url() -> None:
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
    assert normalize_url("sqlite+aiosqlite:///x.db") == "sqlite+aiosqlite:///x.db"
    assert normalize_url("postgresql://u:p@h/db") == "postgresql+asyncpg://u:p@h/db"
    with pytest.raises(StoreError, match="unsupported"):
        normalize_url("mysql://h/db")
    with pytest.raises(StoreError, match="invalid"):
        normalize_url("::not a url::")


async def test_one_failing_job_does_not_undo_its_batch(store: Store, clock: ManualClock) -> None:
    def boom(_conn: object) -> None:
        raise ValueError("boom")

    async def note(actor: str) -> None:
        await store.record("note", request_id=None, actor=actor, now=clock.now())

    results = await asyncio.gather(note("a"), store.run(boom), note("b"), return_exceptions=True)
    assert isinstance(results[1], ValueError)
    assert sorted(e.actor for e in await store.audit_log() if e.event == "note") == ["a", "b"]


async def test_approver_check_is_an_exact_name_match(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now(), approvers=("alice", "b%b", 'x"Bob', "Émile"))
    await store.create_request(req, [], clock.now())
    # LIKE wildcards, a prefix, another case (SQLite's LIKE ignores ASCII case),
    # a name found inside another's JSON text, non-ASCII case.
    for impostor in ("al_ce", "a%", "ali", "b_b", "Alice", "ALICE", "Bob", "x", "émile"):
        result = await store.transition(
            req.id, to="approved", by=impostor, now=clock.now(), approver_check=True
        )
        assert result.outcome == "unauthorized", impostor
    result = await store.transition(
        req.id, to="approved", by='x"Bob', now=clock.now(), approver_check=True
    )
    assert result.outcome == "applied"


async def test_transitions_are_audited_by_the_database(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now(), ttl=5)
    await store.create_request(req, [], clock.now())
    # Even a hand-written UPDATE leaves its audit line.
    await store.run(
        lambda c: c.execute(
            text(
                "UPDATE requests SET status = 'cancelled', resolved_by = 'dba', "
                "resolved_at = created_at WHERE id = :id"
            ),
            {"id": req.id},
        )
    )
    events = [(e.event, e.actor) for e in await store.audit_log(request_id=req.id)]
    assert events == [("requested", "agent-1"), ("cancelled", "dba")]
    [created] = [e for e in await store.audit_log(request_id=req.id) if e.event == "requested"]
    assert created.detail["tool"] == "deploy" and created.detail["approvers"] == ["alice", "bob"]


async def test_webhook_event_ids_are_remembered(store: Store, clock: ManualClock) -> None:
    assert await store.remember_event("line", "01HXYZ", clock.now())
    assert not await store.remember_event("line", "01HXYZ", clock.now())  # a redelivery
    assert await store.remember_event("slack", "01HXYZ", clock.now())  # another source
    clock.advance(86400)
    assert await store.forget_events(clock.now()) == 2
    assert await store.remember_event("line", "01HXYZ", clock.now())


async def test_reminders_are_queued_once_per_due_time(store: Store, clock: ManualClock) -> None:
    req = make_request(clock.now(), ttl=3600)
    req = dataclasses.replace(req, remind_every=60, remind_at=clock.now() + timedelta(seconds=60))
    await store.create_request(req, [ALICE], clock.now())
    assert await store.due_reminders(clock.now()) == []
    clock.advance(61)
    [due] = await store.due_reminders(clock.now())
    assert due.id == req.id
    assert await store.queue_reminder(due, [ALICE], clock.now())
    assert not await store.queue_reminder(due, [ALICE], clock.now())  # once per due time
    assert await store.due_reminders(clock.now()) == []
    clock.advance(60)
    [again] = await store.due_reminders(clock.now())  # and again, remind_every later
    assert await store.queue_reminder(again, [ALICE], clock.now())
    kinds = await store.run(lambda c: c.execute(text("SELECT kind FROM outbox")).scalars().all())
    assert sorted(kinds) == ["reminder", "reminder", "request"]


async def test_the_sweep_reads_only_the_decided_among_many_ids(
    store: Store, clock: ManualClock
) -> None:
    """Past one chunk of ids, padded chunks included: every decided one, once, nothing pending."""
    made = [make_request(clock.now(), session=f"s{i}") for i in range(530)]
    for request in made:
        await store.create_request(request, [], clock.now())
    decided = {made[0].id, made[300].id, made[529].id}
    for request_id in decided:
        await store.transition(request_id, to="approved", by="alice", now=clock.now())
    ids = [r.id for r in made] + ["no-such-id"]
    found = await store.get_requests(ids, decided=True)
    assert sorted(r.id for r in found) == sorted(decided)
    assert all(r.status == "approved" for r in found)
    everything = await store.get_requests(ids)
    assert sorted(r.id for r in everything) == sorted(r.id for r in made)
