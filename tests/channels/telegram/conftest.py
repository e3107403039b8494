"""The Telegram suites' fixtures: the real app against the fake Bot API, by poll or by webhook."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from tapgate.gate.clock import ManualClock
from tests.channels.telegram.served import PUBLIC_URL, Served, serving
from tests.fakes.served import Client

App = Callable[[web.Application], Awaitable[Client]]


@pytest.fixture
def db_url(migrated_sqlite_url: str) -> str:
    """SQLite only, at the head revision: a copy of the migrated template (no Alembic run)."""
    return migrated_sqlite_url


@pytest.fixture
async def served(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    """Presses arrive by long poll (``mode: polling``)."""
    async for s in serving(db_url, clock, aiohttp_client):
        yield s


@pytest.fixture
async def hooked(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    """Presses are posted to ``/webhooks/telegram`` with the secret (``mode: webhook``)."""
    async for s in serving(db_url, clock, aiohttp_client, mode="webhook"):
        yield s


@pytest.fixture
async def public(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    """Polling, with ``server.public_url`` set: the server can make web-inbox sign-in links."""
    async for s in serving(db_url, clock, aiohttp_client, public_url=PUBLIC_URL):
        yield s


@pytest.fixture
async def both(db_url: str, clock: ManualClock, aiohttp_client: App) -> AsyncIterator[Served]:
    """Polling, and the fake Slack API too: alice approves on Slack as well."""
    async for s in serving(db_url, clock, aiohttp_client, slack=True):
        yield s
