"""The gate the decision rules' unit tests decide on (tests/decisions/rule_kit.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tapgate.gate import Gate
from tapgate.gate.clock import ManualClock
from tapgate.store import Store
from tests.decisions.rule_kit import DIRECTORY, POLICY


@pytest.fixture
async def gate(migrated_sqlite_url: str, clock: ManualClock) -> AsyncIterator[Gate]:
    """A real gate on a migrated SQLite file, its time moved only by ``clock``.

    A module of this folder that needs another policy defines its own ``gate``.
    """
    async with (
        await Store.open(migrated_sqlite_url) as store,
        Gate(store=store, policy=POLICY, directory=DIRECTORY, clock=clock) as g,
    ):
        yield g
