"""The Telegram suites' fixtures: the real app against the fake Bot API, by poll or by webhook."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from tapgate.gate.clock import ManualClock
from tests.channels.telegram.served import Served, serving
from tests.fakes.served import Client

App = Callable[[web.Application], Awaitable[Client]]


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/tapgate.db"


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
