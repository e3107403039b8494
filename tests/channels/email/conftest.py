"""The email tests' server: the real app on a fresh SQLite file, the fake relay, a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.email.harness import Served, serving


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    """A test's own server and relay (a module may override it: LINE too, PostgreSQL too)."""
    async with serving(migrated_sqlite_url) as found:
        yield found
