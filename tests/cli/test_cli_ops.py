"""Operator commands: pending, resolve (break-glass), grants, audit.

They use the database as it is: never created, never migrated, and a database
they cannot use is one line on stderr, not a traceback.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from tapgate.cli import main
from tapgate.config import load_config
from tapgate.gate import Gate, ToolCall
from tapgate.policy import Policy
from tapgate.store import Store
from tapgate.store.engine import head_revision

# Every command that opens the store, with the arguments it needs.
OPERATOR_COMMANDS = {
    "pending": ["pending"],
    "resolve": ["resolve", "r1", "approve", "--as", "alice"],
    "grants-list": ["grants", "list"],
    "grants-revoke": ["grants", "revoke", "g1"],
    "audit": ["audit"],
}


def write_config(tmp_path: Path, url: str | None = None) -> Path:
    url = url or f"sqlite:///{tmp_path / 'ops.db'}"
    path = tmp_path / "tapgate.yaml"
    path.write_text(
        f"store: {{url: '{url}'}}\n"
        "approvers:\n  - {name: alice, groups: [oncall]}\n  - {name: bob}\n"
        "policy:\n  rules:\n    - {tool: deploy, action: ask, approvers: [oncall]}\n"
    )
    return path


async def submit(config_path: Path, **call: object) -> str:
    config = load_config(config_path)
    async with await Store.open(config.store_url) as store:
        gate = Gate(store=store, policy=Policy(config.policy_spec()), directory=config.directory())
        ticket = await gate.submit(ToolCall(tool="deploy", agent="ci", **call))  # type: ignore[arg-type]
        assert ticket.request_id is not None
        return ticket.request_id


async def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))  # main runs its own event loop
    out, err = capsys.readouterr()
    return code, out, err


async def test_pending_lists_waiting_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    rid = await submit(config, arguments={"env": "prod"})
    code, out, _ = await cli(capsys, "pending", "--config", str(config), "--json")
    assert code == 0
    [row] = [json.loads(line) for line in out.splitlines()]
    assert (row["id"], row["tool"], row["approvers"]) == (rid, "deploy", ["alice"])


async def test_resolve_is_audited_as_break_glass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    rid = await submit(config)
    # bob is an approver in the config but not of this request: break-glass lets him.
    code, out, _ = await cli(
        capsys,
        "resolve",
        rid,
        "deny",
        "--config",
        str(config),
        "--as",
        "bob",
        "--reason",
        "freeze week",
    )
    assert code == 0
    assert out.startswith("denied by bob")
    code, out, _ = await cli(
        capsys, "audit", "--config", str(config), "--request", rid, "--format", "jsonl"
    )
    entries = [json.loads(line) for line in out.splitlines()]
    [denied] = [e for e in entries if e["event"] == "denied"]
    assert denied["actor"] == "bob"
    detail = json.loads(denied["detail"])  # the stored JSON text, as hashed
    assert detail["break_glass"] is True
    assert detail["reason"] == "freeze week"
    # A second decision is refused with one clear line.
    code, _, err = await cli(
        capsys, "resolve", rid, "approve", "--config", str(config), "--as", "alice"
    )
    assert code == 2
    assert "already denied by bob" in err


async def test_resolve_needs_a_configured_approver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    rid = await submit(config)
    code, _, err = await cli(
        capsys, "resolve", rid, "approve", "--config", str(config), "--as", "mallory"
    )
    assert code == 2
    assert "mallory" in err


async def test_grants_list_and_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    rid = await submit(config, session="s1")
    await cli(
        capsys,
        "resolve",
        rid,
        "approve",
        "--config",
        str(config),
        "--as",
        "alice",
        "--scope",
        "session",
    )
    code, out, _ = await cli(capsys, "grants", "list", "--config", str(config), "--json")
    [grant] = [json.loads(line) for line in out.splitlines()]
    assert (grant["scope"], grant["session"], grant["created_by"]) == ("session", "s1", "alice")
    code, out, _ = await cli(capsys, "grants", "revoke", grant["id"], "--config", str(config))
    assert code == 0
    code, out, _ = await cli(capsys, "grants", "list", "--config", str(config))
    assert out.strip() == "no grants"
    code, _, _ = await cli(capsys, "grants", "revoke", grant["id"], "--config", str(config))
    assert code == 2


async def test_audit_since_rejects_a_bad_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    code, _, err = await cli(capsys, "audit", "--config", str(config), "--since", "yesterday")
    assert code == 2
    assert "ISO 8601" in err


def one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("tapgate: error: ")
    return line


def sqlite_tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return sorted(row[0] for row in conn.execute("SELECT name FROM sqlite_master"))


@pytest.mark.parametrize("command", OPERATOR_COMMANDS.values(), ids=OPERATOR_COMMANDS.keys())
async def test_a_missing_sqlite_file_is_an_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    db = tmp_path / "typo" / "ops.db"
    config = write_config(tmp_path, f"sqlite:///{db}")
    line = one_line_error(*await cli(capsys, *command, "--config", str(config)))
    assert f"database not found: no SQLite file at {db}" in line
    assert "tapgate db upgrade" in line
    assert not db.parent.exists()


@pytest.mark.parametrize("command", OPERATOR_COMMANDS.values(), ids=OPERATOR_COMMANDS.keys())
async def test_an_unmigrated_database_is_an_error_and_is_not_migrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    db = tmp_path / "ops.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (x)")
    config = write_config(tmp_path, f"sqlite:///{db}")
    line = one_line_error(*await cli(capsys, *command, "--config", str(config)))
    assert "is not migrated (run `tapgate db upgrade`)" in line
    assert sqlite_tables(db) == ["notes"]


async def test_an_unmigrated_postgresql_database_is_not_migrated(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, pg_url)
    line = one_line_error(*await cli(capsys, "pending", "--config", str(config)))
    assert "is not migrated" in line
    async with await Store.open(pg_url, migrate=False) as store:
        tables = await store.run(
            lambda c: c.execute(
                text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            ).scalar_one()
        )
    assert tables == 0


async def test_a_database_from_a_newer_tapgate_is_an_error_and_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    await submit(config)  # creates and migrates ops.db
    with sqlite3.connect(tmp_path / "ops.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099'")
    line = one_line_error(*await cli(capsys, "pending", "--config", str(config)))
    assert f"is at revision 0099, but this tapgate expects {head_revision()}" in line
    with sqlite3.connect(tmp_path / "ops.db") as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("0099",)]


async def test_a_file_that_is_not_sqlite_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ops.db"
    db.write_text("these are my notes, not a database\n" * 200)
    config = write_config(tmp_path, f"sqlite:///{db}")
    line = one_line_error(*await cli(capsys, "pending", "--config", str(config)))
    assert f"database error at sqlite:///{db}: file is not a database" in line
    assert db.read_text() == "these are my notes, not a database\n" * 200


@pytest.mark.parametrize("command", OPERATOR_COMMANDS.values(), ids=OPERATOR_COMMANDS.keys())
async def test_an_unreachable_postgresql_is_one_line_without_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], closed_port: int
) -> None:
    port = closed_port
    config = write_config(tmp_path, f"postgresql://ops:s3cret-pw@127.0.0.1:{port}/tapgate")
    code, out, err = await cli(capsys, *command, "--config", str(config))
    assert "s3cret-pw" not in out + err
    line = one_line_error(code, out, err)
    assert f"cannot reach the database at postgresql://ops:***@127.0.0.1:{port}/tapgate: " in line


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        (
            "?password=s3cret-pw",
            "cannot reach the database at postgresql://ops@127.0.0.1:{port}/tapgate?password=***: ",
        ),
        (
            "?sslmode=require",
            "cannot use the database URL postgresql://ops@127.0.0.1:{port}/"
            "tapgate?sslmode=require: ",
        ),
    ],
    ids=["password-in-query", "libpq-option"],
)
async def test_url_options_are_one_line_and_a_query_password_is_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str, shown: str, closed_port: int
) -> None:
    """asyncpg takes ``?password=`` (hide_password does not mask it) and refuses ``sslmode``."""
    port = closed_port
    config = write_config(tmp_path, f"postgresql://ops@127.0.0.1:{port}/tapgate{query}")
    code, out, err = await cli(capsys, "pending", "--config", str(config))
    assert "s3cret-pw" not in out + err
    assert shown.format(port=port) in one_line_error(code, out, err)


async def test_grants_list_shows_the_uses_a_single_use_grant_has_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_path = write_config(tmp_path)
    rid = await submit(config_path, arguments={"env": "prod"})
    config = load_config(config_path)
    async with await Store.open(config.store_url) as store:
        gate = Gate(store=store, policy=Policy(config.policy_spec()), directory=config.directory())
        await gate.resolve(rid, "approve", by="alice", scope="always", grant_uses=1)
    code, out, _ = await cli(capsys, "grants", "list", "--config", str(config_path), "--json")
    [grant] = [json.loads(line) for line in out.splitlines()]
    assert (code, grant["scope"], grant["uses_left"]) == (0, "always", 1)
    code, out, _ = await cli(capsys, "grants", "list", "--config", str(config_path))
    assert out.strip().endswith("by alice  active, 1 use left")


async def test_resolve_remembers_only_what_the_policy_offers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Break-glass skips the approver check, not ``remember`` / ``always_ttl`` / ``always_uses``."""
    path = tmp_path / "tapgate.yaml"
    path.write_text(
        f"store: {{url: 'sqlite:///{tmp_path / 'ops.db'}'}}\n"
        "approvers:\n  - {name: alice, groups: [oncall]}\n"
        "policy:\n  always_ttl: 2d\n  rules:\n"
        "    - {tool: deploy, args: {env: prod}, action: ask, approvers: [oncall],"
        " remember: [once, session]}\n"
        "    - {tool: deploy, action: ask, approvers: [oncall], always_uses: 3}\n"
    )
    prod = await submit(path, arguments={"env": "prod"}, session="s1")
    code, _, err = await cli(
        capsys, "resolve", prod, "approve", "--config", str(path), "--as", "alice",
        "--scope", "always",
    )  # fmt: skip
    assert code == 2 and "cannot be remembered" in err
    code, out, _ = await cli(capsys, "grants", "list", "--config", str(path), "--json")
    assert out == ""  # nothing decided, nothing granted
    staging = await submit(path, arguments={"env": "staging"})
    code, _, _ = await cli(
        capsys, "resolve", staging, "approve", "--config", str(path), "--as", "alice",
        "--scope", "always",
    )  # fmt: skip
    assert code == 0
    code, out, _ = await cli(capsys, "grants", "list", "--config", str(path), "--json")
    [grant] = [json.loads(line) for line in out.splitlines()]
    assert (grant["scope"], grant["uses_left"]) == ("always", 3)
    created = datetime.fromisoformat(grant["created_at"])
    assert datetime.fromisoformat(grant["expires_at"]) - created == timedelta(days=2)
