"""The audit log's hash chain on both backends, tampered with as a database user would.

The attacker drops the append-only trigger (or the chain's) and edits rows
with plain SQL; ``Store.verify_audit`` must name the first row that shows it.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from sqlalchemy import Connection, insert, text, update

from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Delivery, Grant
from tapgate.store import Store
from tapgate.store.audit_chain import GENESIS_EVENT, ZERO, ChainRow, link, verify
from tapgate.store.engine import connect, current_revision, head_revision, upgrade
from tapgate.store.rows import request_to_row
from tapgate.store.schema import requests
from tests.factories import make_request

ALICE = Delivery(approver="alice", channel="console", address="alice")

# Everything JSON escapes, and what it leaves alone, in text the triggers hash.
ODD = 'é\x01\x1f\t\n"\\/\x7f\u2028😀 <b>'


async def busy_log(store: Store, clock: ManualClock) -> None:
    """Rows from every writer: both request triggers, a refusal, a grant, notes."""
    for n in range(3):
        req = make_request(clock.now(), tool=f"deploy{ODD}{n}", agent=f"ci{ODD}")
        await store.create_request(req, [ALICE], clock.now())
        await store.transition(
            req.id,
            to="approved",
            by="alice",
            now=clock.now(),
            scope="always",
            grant=lambda r: Grant(
                id=f"g{r.id}",
                scope="always",
                agent=r.agent,
                session=None,
                tool=r.tool,
                fingerprint=r.fingerprint,
                created_at=clock.now(),
                created_by="alice",
                request_id=r.id,
            ),
        )
        await store.transition(req.id, to="denied", by="bob", now=clock.now())  # refused
        clock.advance(1.5)
    await store.record("note", request_id=None, actor=ODD, now=clock.now(), detail={"x": ODD})


async def chain(store: Store) -> list[ChainRow]:
    return [row async for row in store.audit_chain()]


def attacker(conn: Connection, *statements: str) -> None:
    """Run SQL as someone with database access, past the append-only trigger."""
    if conn.dialect.name == "sqlite":
        conn.execute(text("DROP TRIGGER audit_no_update"))
        conn.execute(text("DROP TRIGGER audit_no_delete"))
    else:
        conn.execute(text("DROP TRIGGER audit_append_only ON audit"))
    for statement in statements:
        conn.execute(text(statement))


async def test_a_clean_log_verifies(store: Store, clock: ManualClock) -> None:
    await busy_log(store, clock)
    rows = await chain(store)
    assert rows[0].event == GENESIS_EVENT and rows[0].prev_hash == ZERO
    assert len(rows) == 1 + 3 * 4 + 1  # requested, approved, grant, refused; the note
    for before, after in itertools.pairwise(rows):
        assert after.prev_hash == before.hash
        assert after.hash == after.computed()  # the database's hash is Python's
    verdict = await store.verify_audit()
    assert verdict.ok and verdict.from_genesis
    assert (verdict.rows, verdict.earlier) == (len(rows), 0)
    assert verdict.head == (rows[-1].id, rows[-1].hash)


async def test_an_edited_row_is_found_at_that_row(store: Store, clock: ManualClock) -> None:
    await busy_log(store, clock)
    [approved, *_] = [r for r in await chain(store) if r.event == "approved"]
    await store.run(
        lambda c: attacker(
            c, f'UPDATE audit SET detail = \'{{"scope": "once"}}\' WHERE id = {approved.id}'
        )
    )
    verdict = await store.verify_audit()
    assert verdict.broken_at == approved.id
    assert verdict.problem is not None and "contents" in verdict.problem
    assert verdict.rows == approved.id - 1  # every row before it holds


async def test_an_edited_row_with_its_hash_recomputed_breaks_the_next_link(
    store: Store, clock: ManualClock
) -> None:
    await busy_log(store, clock)
    rows = await chain(store)
    victim = rows[3]
    forged = link(victim.prev_hash, victim.id, victim.at, victim.event, None, "mallory", "{}")
    await store.run(
        lambda c: attacker(
            c,
            f"UPDATE audit SET actor = 'mallory', detail = '{{}}', request_id = NULL, "
            f"hash = '{forged}' WHERE id = {victim.id}",
        )
    )
    verdict = await store.verify_audit()
    assert verdict.broken_at == rows[4].id
    assert verdict.problem is not None and f"row {victim.id}" in verdict.problem


@pytest.mark.parametrize(("deleted", "found"), [(5, "removed"), (0, "genesis")])
async def test_a_deleted_row_is_found(
    store: Store, clock: ManualClock, deleted: int, found: str
) -> None:
    await busy_log(store, clock)
    rows = await chain(store)
    await store.run(lambda c: attacker(c, f"DELETE FROM audit WHERE id = {rows[deleted].id}"))
    verdict = await store.verify_audit()
    assert verdict.broken_at == rows[deleted + 1].id
    assert verdict.problem is not None and found in verdict.problem


async def test_reordered_rows_are_found(store: Store, clock: ManualClock) -> None:
    await busy_log(store, clock)
    rows = await chain(store)
    a, b = rows[4].id, rows[5].id
    await store.run(
        lambda c: attacker(
            c,
            f"UPDATE audit SET id = -1 WHERE id = {a}",
            f"UPDATE audit SET id = {a} WHERE id = {b}",
            f"UPDATE audit SET id = {b} WHERE id = -1",
        )
    )
    assert (await store.verify_audit()).broken_at == a


async def test_a_row_inserted_around_the_chain_is_found(store: Store, clock: ManualClock) -> None:
    await busy_log(store, clock)
    rows = await chain(store)
    # A forged approval, linked to an old row (a fork) with a hash that checks out on its own.
    fork = rows[2]
    row_id, at = rows[-1].id + 1, rows[-1].at
    forged = link(fork.hash, row_id, at, "approved", None, "alice", "{}")
    drop = (
        "DROP TRIGGER audit_chain"
        if store.dialect == "sqlite"
        else "DROP TRIGGER audit_chain ON audit"
    )
    await store.run(
        lambda c: attacker(
            c,
            drop,
            "INSERT INTO audit (id, at, event, request_id, actor, detail, prev_hash, hash) "
            f"SELECT {row_id}, at, 'approved', NULL, 'alice', '{{}}', '{fork.hash}', "
            f"'{forged}' FROM audit WHERE id = {rows[-1].id}",
        )
    )
    verdict = await store.verify_audit()
    assert verdict.broken_at == row_id
    assert verdict.problem is not None and "prev_hash" in verdict.problem
    # Without a hash at all, it is found too.
    await store.run(lambda c: c.execute(text(f"UPDATE audit SET hash = NULL WHERE id = {row_id}")))
    verdict = await store.verify_audit()
    assert verdict.broken_at == row_id and "no hash" in (verdict.problem or "")


async def test_anchors_catch_a_log_cut_short(store: Store, clock: ManualClock) -> None:
    await busy_log(store, clock)
    rows = await chain(store)
    head = rows[-1]
    assert (await store.verify_audit(anchors={head.id: head.hash or ""})).ok
    # Removing the newest row leaves a chain that holds on its own; the anchor does not.
    await store.run(lambda c: attacker(c, f"DELETE FROM audit WHERE id = {head.id}"))
    assert (await store.verify_audit()).ok
    verdict = await store.verify_audit(anchors={head.id: head.hash or ""})
    assert verdict.broken_at == head.id and "cut short" in (verdict.problem or "")


LATER_COLUMNS = frozenset(
    [
        "batch_id",
        "consumed_at",
        "decided_seq",
        "quorum",
        "owner",
        "approvals",
        "remind_every",
        "remind_at",
        "escalate_at",
        "escalate_to",
        "escalated_at",
        "edited_arguments",
    ]
)
OLD_COLUMNS = frozenset(c.name for c in requests.c if c.name not in LATER_COLUMNS)
"""The requests table as revision 0002 had it (migrations 0004, 0007 and 0010 added the rest)."""


async def test_rows_written_before_the_migration_are_covered_by_the_genesis(
    db_url: str, clock: ManualClock
) -> None:
    runner = connect(db_url)
    await runner.run(lambda c: upgrade(c, "0002"))
    await runner.close()
    async with await Store.open(db_url, migrate=False) as old:
        # Written as revision 0002's columns: today's store would name later ones.
        req = make_request(clock.now(), tool=f"old{ODD}")
        row = {k: v for k, v in request_to_row(req).items() if k in OLD_COLUMNS}
        decided = {"status": "approved", "resolved_at": clock.now(), "resolved_by": "alice"}
        await old.run(lambda c: c.execute(insert(requests).values(row)))
        await old.run(
            lambda c: c.execute(update(requests).where(requests.c.id == req.id).values(decided))
        )
        await old.record("note", request_id=None, actor="ops", now=clock.now())
    async with await Store.open(db_url) as store:  # migrates to the head
        assert await store.run(current_revision) == head_revision()
        clock.advance(60)
        await store.record("note", request_id=None, actor="ops", now=clock.now())
        rows = await chain(store)
        assert [r.hash is None for r in rows] == [True] * 3 + [False] * 2
        assert rows[3].event == GENESIS_EVENT and '"earlier_rows": 3' in rows[3].detail
        verdict = await store.verify_audit()
        assert verdict.ok and verdict.earlier == 3 and verdict.rows == 5
        # An edit to a row from before the chain shows at the genesis.
        await store.run(lambda c: attacker(c, "UPDATE audit SET actor = 'mallory' WHERE id = 2"))
        verdict = await store.verify_audit()
        assert verdict.broken_at == rows[3].id and "before the chain" in (verdict.problem or "")


async def test_the_migration_goes_down_and_up_again(db_url: str, clock: ManualClock) -> None:
    async with await Store.open(db_url) as store:
        await store.record("note", request_id=None, actor="ops", now=clock.now())
        await store.run(lambda c: upgrade_or_downgrade(c, "0002"))
        await store.record("note", request_id=None, actor="ops", now=clock.now())
        with pytest.raises(Exception, match="append-only"):
            await store.run(lambda c: c.execute(text("UPDATE audit SET actor = 'x'")))
        await store.run(lambda c: upgrade_or_downgrade(c, "head"))
        await store.record("note", request_id=None, actor="ops", now=clock.now())
        verdict = await store.verify_audit()
        assert verdict.ok and verdict.earlier == 3 and verdict.rows == 5  # the old genesis too


def upgrade_or_downgrade(conn: Connection, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    import tapgate.store

    config = Config()
    migrations = Path(tapgate.store.__file__).parent / "migrations"
    config.set_main_option("script_location", str(migrations))
    config.attributes["connection"] = conn
    if revision == "head":
        command.upgrade(config, revision)
    else:
        command.downgrade(config, revision)


async def test_replicas_appending_at_once_keep_one_chain(pg_url: str, clock: ManualClock) -> None:
    """Two replicas, many transactions each writing audit lines at once: one chain, no fork."""
    async with await Store.open(pg_url) as a, await Store.open(pg_url) as b:

        async def work(store: Store, n: int) -> None:
            req = make_request(clock.now(), session=f"s{n}")
            await store.create_request(req, [ALICE], clock.now())
            await store.record("note", request_id=req.id, actor=f"r{n}", now=clock.now())
            await store.transition(req.id, to="approved", by="alice", now=clock.now())

        await asyncio.gather(*(work(a if n % 2 else b, n) for n in range(120)))
        rows = await chain(a)
        assert len(rows) == 1 + 120 * 3
        assert len({r.prev_hash for r in rows}) == len(rows)  # no two rows share a parent
        assert [r.id for r in rows] == sorted(r.id for r in rows)
        verdict = await b.verify_audit()
        assert verdict.ok, verdict


def test_an_export_is_checked_without_the_database() -> None:
    """The pure checker over rows built here: reorder, insert, edit, a partial copy."""
    rows: list[ChainRow] = []
    prev = ZERO
    for n in range(1, 6):
        event = GENESIS_EVENT if n == 1 else "note"
        at = f"2026-11-21T09:00:0{n}.000000+00:00"
        digest = link(prev, n, at, event, None, "ops", "{}")
        rows.append(ChainRow(id=n, at=at, event=event, request_id=None, actor="ops",
                             detail="{}", prev_hash=prev, hash=digest))  # fmt: skip
        prev = digest
    assert verify(rows).ok
    assert verify([rows[0], rows[2], rows[1], *rows[3:]]).broken_at == 3  # out of place
    assert verify([*rows[:2], *rows[3:]]).broken_at == 4
    assert verify([rows[0], *rows[2:]]).broken_at == 3
    assert not verify(rows[2:]).ok  # a database must begin at its genesis
    partial = verify(rows[2:], require_genesis=False)  # an export --since may not
    assert partial.ok and not partial.from_genesis
