"""The email tests' server: the real app on a fresh SQLite file, the fake relay, a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.channels.email.harness import Served, serving


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """A test's own server and relay (a module may override it: LINE too, PostgreSQL too)."""
    async with serving(f"sqlite:///{tmp_path / 'tapgate.db'}") as found:
        yield found
