"""What marks a decision in the database: its number, and the batch cards it makes stale.

Decisions are numbered for the agents' decided-since cursor
(``GET /v1/tool-calls?status=decided&after=``): the deciding transaction bumps
the one-row ``decision_seq`` counter and reads it back in its own UPDATE. On
PostgreSQL the bump holds the row's lock until commit, so numbers are handed
out in commit order and a reader that saw number n never later finds a smaller
one appear. A batch member's decision also bumps its batch's ``version``, so
the batch's cards are rewritten once per wave of decisions
(:mod:`~tapgate.store.batch_outbox`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, select, update

from tapgate.gate.models import Request
from tapgate.store.prepared import Prepared
from tapgate.store.schema import batches, decision_seq

__all__ = ["SEQ", "bump", "stale_batches"]

_BUMP = Prepared(update(decision_seq).where(decision_seq.c.id == 1).values(n=decision_seq.c.n + 1))
SEQ = select(decision_seq.c.n).where(decision_seq.c.id == 1).scalar_subquery()
"""The number just handed out, as a value the deciding UPDATE sets."""
_BUMP_BATCH = (
    update(batches)
    .where(batches.c.id == bindparam("b_batch"))
    .values(version=batches.c.version + 1)
)


def bump(conn: Connection) -> None:
    """Hand out the next decision number (read it with :data:`SEQ` in the same transaction)."""
    _BUMP.rowcount(conn, {})


def stale_batches(conn: Connection, decided: Sequence[Request]) -> None:
    """Mark the cards of the batches these requests belong to as stale (batch members only)."""
    for batch_id in sorted({r.batch_id for r in decided if r.batch_id is not None}):
        conn.execute(_BUMP_BATCH, {"b_batch": batch_id})
