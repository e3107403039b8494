"""Prepared statements: the raw-cursor path returns exactly what ``conn.execute`` would."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection, insert
from sqlalchemy.exc import IntegrityError

from tapgate.gate.clock import ManualClock
from tapgate.store import Store
from tapgate.store.lifecycle import _DECIDE
from tapgate.store.prepared import Prepared
from tapgate.store.schema import webhook_events
from tests.factories import make_request

# A literal (``status == "pending"``), a parameter used twice (``b_now``) and
# RETURNING: the store's own compare-and-set.
DECIDE = _DECIDE


async def test_returning_matches_conn_execute(store: Store, clock: ManualClock) -> None:
    one, two = make_request(clock.now(), session="a"), make_request(clock.now(), session="b")
    for request in (one, two):
        await store.create_request(request, [], clock.now())
    clock.advance(5)
    params = {
        "b_now": clock.now(),
        "b_by": "alice",
        "b_status": "approved",
        "b_reason": "ok",
        "b_scope": "once",
        "b_detail": None,
        "b_edited": None,
        "b_edited_digest": None,
    }
    prepared = Prepared(DECIDE)

    def both(conn: Connection) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        core = dict(conn.execute(DECIDE, {**params, "b_id": one.id}).mappings().one())
        return core, prepared.returning(conn, {**params, "b_id": two.id})

    core, [fast] = await store.runner.run(both)
    assert fast.keys() == core.keys()
    differ = {k for k in core if core[k] != fast[k]}
    assert differ == {"id", "session"}  # the two requests, nothing else
    assert fast["resolved_at"] == clock.now()  # processed: an aware UTC datetime
    assert fast["resolved_at"].utcoffset() is not None
    assert fast["grantable"] is core["grantable"]

    again = await store.runner.run(lambda c: prepared.returning(c, {**params, "b_id": two.id}))
    assert again == []  # the literal ``pending`` is bound: a decided request is not matched


async def test_rowcount_and_unknown_parameter(store: Store, clock: ManualClock) -> None:
    await store.create_request(make_request(clock.now()), [], clock.now())
    prepared = Prepared(DECIDE)
    params = {
        "b_id": "nope",
        "b_now": clock.now(),
        "b_by": "x",
        "b_status": "denied",
        "b_reason": None,
        "b_scope": "once",
        "b_detail": None,
        "b_edited": None,
        "b_edited_digest": None,
    }
    assert await store.runner.run(lambda c: prepared.rowcount(c, params)) == 0
    with pytest.raises(KeyError):
        await store.runner.run(lambda c: prepared.rowcount(c, {"b_id": "nope"}))


async def test_a_driver_error_is_sqlalchemys_error(store: Store, clock: ManualClock) -> None:
    """What ``conn.execute`` would raise (the API maps lost databases by these classes)."""
    remember = Prepared(insert(webhook_events))  # no ON CONFLICT: a second insert fails
    seen = {"source": "line", "event_id": "e1", "received_at": clock.now()}
    assert await store.runner.run(lambda c: remember.rowcount(c, seen)) == 1
    with pytest.raises(IntegrityError) as raised:
        await store.runner.run(lambda c: remember.rowcount(c, seen))
    assert "e1" not in str(raised.value)  # parameters hidden: they can be user data
    assert await store.remember_event("line", "e2", clock.now())  # the store carries on
