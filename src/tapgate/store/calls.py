"""Calls the agent named itself: its own id mapped to tapgate's request or immediate decision.

Some protocols let the client choose a call's id and poll the answer by that
id later (HumanLayer's ``call_id``). tapgate's requests have ids the server
makes (:func:`~tapgate.gate.records.new_id`), and a call that policy or a grant
decides at once has no request at all; so each such call is kept here, keyed
by (agent, call id): the body the client sent, to tell a harmless retry from
an id reused for something else and to echo it back, and *either* the request
that follows the call *or* the decision made at once (a check constraint).

Being a row, the mapping survives a restart and is seen by every replica.
The primary key makes the first writer win, so two concurrent creates with one
id end up with one answer; the caller compares bodies to spot a conflict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from tapgate.gate.models import Decision
from tapgate.store import engine as _engine
from tapgate.store.requests import storable_id
from tapgate.store.rows import decision_from_json, decision_to_json
from tapgate.store.schema import client_calls

__all__ = ["ClientCall", "ClientCalls"]

_INSERT = {
    "sqlite": sqlite.insert(client_calls).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(client_calls).on_conflict_do_nothing(),
}
_SELECT = select(client_calls).where(
    client_calls.c.agent == bindparam("b_agent"),
    client_calls.c.call_id == bindparam("b_call_id"),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientCall:
    """One agent-named call: what was sent, and where its answer lives.

    Exactly one of ``request_id`` (a human decides) and ``decision`` (policy or
    a grant decided at once) is set. ``kind`` says which protocol object the
    id names (``humanlayer.function_call``...), so one id cannot be read as
    another kind of thing; ``body`` is the client's request as canonical JSON.
    """

    agent: str
    call_id: str
    kind: str
    body: str
    created_at: datetime
    request_id: str | None = None
    decision: Decision | None = None


class ClientCalls:
    """The ``client_calls`` table: add once, read by (agent, call id)."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def add(self, call: ClientCall) -> tuple[ClientCall, bool]:
        """Record ``call`` unless its id is taken: the stored call, and whether it is ``call``.

        When the id is taken (a retry, or a concurrent create that won), the
        call stored first comes back with ``False``; the caller decides whether
        its body makes that a harmless repeat or a conflict.
        """
        statement = _INSERT[self.runner.dialect]
        row = _to_row(call)

        def run(conn: Connection) -> tuple[ClientCall, bool]:
            created = conn.execute(statement, row).rowcount == 1
            stored = _get(conn, call.agent, call.call_id)
            assert stored is not None  # inserted, or there already
            return stored, created

        return await self.runner.run(run)

    async def get(self, agent: str, call_id: str) -> ClientCall | None:
        """The call ``agent`` named ``call_id``; ``None`` if it never did (or could not have)."""
        if not storable_id(call_id):
            return None
        return await self.runner.read(lambda c: _get(c, agent, call_id))


def _get(conn: Connection, agent: str, call_id: str) -> ClientCall | None:
    row = conn.execute(_SELECT, {"b_agent": agent, "b_call_id": call_id}).mappings().first()
    return _from_row(row) if row is not None else None


def _to_row(call: ClientCall) -> dict[str, Any]:
    decision = json.dumps(decision_to_json(call.decision)) if call.decision is not None else None
    return {
        "agent": call.agent,
        "call_id": call.call_id,
        "kind": call.kind,
        "body": call.body,
        "request_id": call.request_id,
        "decision": decision,
        "created_at": call.created_at,
    }


def _from_row(row: Mapping[Any, Any]) -> ClientCall:
    saved = row["decision"]
    decision = decision_from_json(json.loads(saved)) if saved is not None else None
    return ClientCall(
        agent=row["agent"],
        call_id=row["call_id"],
        kind=row["kind"],
        body=row["body"],
        created_at=row["created_at"],
        request_id=row["request_id"],
        decision=decision,
    )
