"""Conversations a channel learned it may post in: one reference per approver address.

Some platforms cannot open a chat with a user from a user id alone: a Teams
bot must be installed by the user, and then posts in the conversation the
installation (or the user's first message) names. The receiver stores that
reference here when it sees it; the notifier reads it to deliver. The
reference is the platform's own small record (JSON text: for Teams the
service URL, conversation id and tenant); what it means is the channel's.
Written with an upsert, so the latest installation wins and a replica that
sees the same event twice writes the same row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite

from tapgate.store import engine as _engine
from tapgate.store.schema import channel_conversations

__all__ = ["Conversations"]

_table = channel_conversations


class Conversations:
    """The ``channel_conversations`` table."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def get(self, channel: str, address: str) -> dict[str, str] | None:
        """The stored reference for ``address`` on ``channel``, or ``None``."""

        def read(conn: Connection) -> str | None:
            found = conn.execute(
                select(_table.c.reference).where(
                    _table.c.channel == channel, _table.c.address == address
                )
            ).scalar_one_or_none()
            return None if found is None else str(found)

        raw = await self.runner.read(read)
        if raw is None:
            return None
        value = json.loads(raw)
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else None

    async def put(
        self, channel: str, address: str, reference: Mapping[str, str], now: datetime
    ) -> None:
        """Store ``reference`` for ``address`` on ``channel`` (replacing an older one)."""
        text = json.dumps(dict(reference), sort_keys=True, separators=(",", ":"))

        def write(conn: Connection) -> None:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            row = {"channel": channel, "address": address, "reference": text, "updated_at": now}
            statement = dialect.insert(_table).values(**row)
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[_table.c.channel, _table.c.address],
                    set_={"reference": text, "updated_at": now},
                )
            )

        await self.runner.run(write)

    async def addresses(self, channel: str) -> frozenset[str]:
        """Every address ``channel`` has a reference for."""

        def read(conn: Connection) -> frozenset[str]:
            rows = conn.execute(select(_table.c.address).where(_table.c.channel == channel))
            return frozenset(str(row[0]) for row in rows)

        return await self.runner.read(read)
