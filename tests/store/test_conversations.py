"""The conversation-reference store (Teams' installations), on SQLite and PostgreSQL.

The receiver writes a reference each time an approver installs the app or
messages the bot, possibly from several replicas at once; the notifier reads
the latest; doctor lists who has one. An upsert keeps one row per address.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tapgate.store import Store

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
ALICE = "72f988bf-86f1-41af-91ab-2d7cd011db47/00000000-0000-4000-8000-000000000001"


def reference(conversation: str) -> dict[str, str]:
    return {"service_url": "https://smba.example/", "conversation_id": conversation}


async def test_the_latest_reference_wins_and_channels_stay_apart(store: Store) -> None:
    book = store.conversations
    assert await book.get("teams", ALICE) is None
    await book.put("teams", ALICE, reference("a:1"), NOW)
    await book.put("teams", ALICE, reference("a:2"), NOW + timedelta(minutes=1))  # reinstalled
    assert await book.get("teams", ALICE) == reference("a:2")
    assert await book.addresses("teams") == frozenset({ALICE})
    assert await book.addresses("other") == frozenset()
    assert await book.get("other", ALICE) is None


async def test_the_same_installation_seen_by_many_replicas_at_once_is_one_row(
    store: Store,
) -> None:
    writes = [store.conversations.put("teams", ALICE, reference("a:1"), NOW) for _ in range(20)]
    await asyncio.gather(*writes)
    assert await store.conversations.get("teams", ALICE) == reference("a:1")
    assert await store.conversations.addresses("teams") == frozenset({ALICE})
