"""One replica at a time for timed duties: a PostgreSQL session advisory lock.

Expiry and reminders are compare-and-set operations, so two replicas doing
them at once would still be correct, only wasteful. The heartbeat therefore
runs them on the replica that holds the ``tapgate-heartbeat`` advisory lock.
The lock belongs to one dedicated connection (in autocommit, so it never sits
idle in a transaction): if that replica dies or loses the connection, the
lock is released and the next replica to beat takes over.
"""

from __future__ import annotations

import contextlib
import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["HEARTBEAT_LOCK", "Leadership"]

log = logging.getLogger(__name__)

HEARTBEAT_LOCK = 0x74617067  # "tapg": the advisory-lock key of the heartbeat duties


class Leadership:
    """Try to hold an advisory lock; ``hold()`` says whether this replica leads now."""

    def __init__(self, engine: AsyncEngine, key: int = HEARTBEAT_LOCK) -> None:
        self._engine = engine
        self._key = key
        self._conn: AsyncConnection | None = None

    async def hold(self) -> bool:
        """True while this replica holds the lock; tries to take it when it does not."""
        if self._conn is not None:
            try:
                await self._conn.execute(text("SELECT 1"))
            except Exception:  # the connection died, and the lock with it
                log.warning("lost the heartbeat lock's connection")
                await self._drop()
            else:
                return True
        conn = await (await self._engine.connect()).execution_options(isolation_level="AUTOCOMMIT")
        try:
            taken = await conn.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": self._key})
        except Exception:
            await conn.close()
            raise
        if taken:
            self._conn = conn
            log.info("this replica now runs the heartbeat duties")
            return True
        await conn.close()
        return False

    async def close(self) -> None:
        """Release the lock (another replica takes over on its next beat)."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": self._key}
                )
            await self._drop()

    async def _drop(self) -> None:
        """Discard the lock's connection: invalidated, never handed back to the pool.

        The lock is the *session's*. If a probe failed and the session is in
        fact alive (a timeout, a hiccup), a pooled connection would keep the
        lock while nobody leads: this replica would ask again on another
        session and be refused by its own, and so would every other replica.
        Invalidating closes the session, and PostgreSQL releases the lock.
        """
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.invalidate()
            with contextlib.suppress(Exception):
                await conn.close()
