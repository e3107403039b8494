"""``tapgate doctor`` with Teams: per approver, whether tapgate can message them yet.

A bot reaches a Teams user only in a conversation the user opened (installing
the app, or messaging the bot), which the server stores. Doctor opens the
store (SQLite or PostgreSQL) and hands its conversations to the channel's
check: an approver with one passes, one without is listed with the fix, and
the reach summary counts only the approvers Teams can message. The Entra token
endpoint is the fake's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapgate.cli import main
from tapgate.store import Store
from tests.channels.teams.served import address
from tests.fakes.teams import FakeTeams

INSTALL = "no conversation yet: the approver must install the tapgate app in Teams (or message it)"


@pytest.fixture
async def teams() -> AsyncIterator[FakeTeams]:
    async with FakeTeams() as fake:
        yield fake


def write_config(tmp_path: Path, teams: FakeTeams, db_url: str) -> Path:
    config = {
        "store": {"url": db_url},
        "approvers": [
            {"name": "alice", "teams": address(1)},
            {"name": "bob", "teams": address(2)},
        ],
        "channels": {"teams": teams.settings()},
        "policy": {"rules": [{"tool": "deploy", "action": "ask", "approvers": ["alice", "bob"]}]},
    }
    path = tmp_path / "tapgate.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


async def doctor(capsys: pytest.CaptureFixture[str], config: Path) -> tuple[int, list[str]]:
    code = await asyncio.to_thread(main, ["doctor", "--config", str(config)])
    out, _ = capsys.readouterr()
    return code, out.splitlines()


async def test_each_approver_is_reported_by_whether_they_opened_a_conversation(
    tmp_path: Path, teams: FakeTeams, migrated_db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await Store.open(migrated_db_url, migrate=False) as store:
        reference = {"service_url": teams.service_url, "conversation_id": "a:1", "tenant_id": "t"}
        await store.conversations.put("teams", address(1), reference, datetime.now(UTC))
    code, lines = await doctor(capsys, write_config(tmp_path, teams, migrated_db_url))
    assert code == 1
    assert lines == [
        "✓ teams: bot credentials",
        f"✓ teams: approver alice ({address(1)})",
        f"✗ teams: approver bob ({address(2)}): {INSTALL}",
        "✓ approver alice reachable: on teams",
        "✗ approver bob reachable: no channel reaches them (tried: teams)",
    ]


async def test_without_a_database_doctor_says_it_cannot_tell(
    tmp_path: Path, teams: FakeTeams, capsys: pytest.CaptureFixture[str]
) -> None:
    db_url = f"sqlite:///{tmp_path / 'never-served.db'}"
    code, lines = await doctor(capsys, write_config(tmp_path, teams, db_url))
    assert code == 1
    assert lines[0] == "✓ teams: bot credentials"
    assert lines[1].startswith(f"✗ teams: approver alice ({address(1)}): cannot tell: ")
    assert "`tapgate serve`" in lines[1]
    assert not (tmp_path / "never-served.db").exists()  # doctor creates no database
