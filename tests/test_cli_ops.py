"""Operator commands: pending, resolve (break-glass), grants, audit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tapgate.bot.cli import main
from tapgate.bot.config import load_config
from tapgate.core import Gate, Policy, Store, ToolCall


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "tapgate.yaml"
    path.write_text(
        f"store: {{url: 'sqlite:///{tmp_path / 'ops.db'}'}}\n"
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
    assert denied["detail"]["break_glass"] is True
    assert denied["detail"]["reason"] == "freeze week"
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
