"""The ``tapgate`` command line: config checks, migrations, explain, and bad input."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
from importlib.metadata import entry_points, version
from pathlib import Path

import pytest

import tapgate
from tapgate.cli import main
from tapgate.cli.commands import COMMANDS
from tapgate.cli.parser import build_parser
from tapgate.config import load_config
from tapgate.store import Store
from tapgate.store.engine import head_revision

ROOT = Path(__file__).parents[2]
LOCAL = str(ROOT / "examples" / "local.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_console_script_is_installed() -> None:
    [script] = [e for e in entry_points(group="console_scripts") if e.name == "tapgate"]
    assert script.value == "tapgate.cli:main"


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``tapgate --version``: the installed package's version, answered without argparse."""
    assert run(capsys, "--version") == (0, f"tapgate {version('tapgate')}\n", "")
    tapgate_script = Path(sys.executable).with_name("tapgate")
    shown = subprocess.run(
        [str(tapgate_script), "--version"], check=True, capture_output=True, text=True
    ).stdout
    assert shown == f"tapgate {tapgate.__version__}\n"


def test_the_command_table_is_the_command_line() -> None:
    """Every subcommand runs its entry of the typed table, and every entry is reachable."""

    def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> dict[str, object]:
        found: dict[str, object] = {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found |= leaves(child, (*path, name))
        # A command may also have subcommands (`audit` and `audit verify`).
        if not found or parser.get_default("func") is not None:
            found[" ".join(path)] = parser.get_default("func")
        return found

    assert leaves(build_parser(), ()) == dict(COMMANDS)


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "explain",
        "--config",
        LOCAL,
        "--tool",
        "Bash",
        "--args",
        '{"command": "git status && rm -rf /"}',
        "--json",
    )
    assert code == 0
    result = json.loads(out)
    assert result["decision"] == "deny"
    assert result["rule"] == "policy.rules[3]"
    assert "rm -rf /" in result["reason"]


@pytest.mark.parametrize(
    ("tool", "args", "decision", "rule"),
    [
        ("Bash", {"command": "git status"}, "allow", "policy.rules[0]"),
        ("Read", {"file_path": "/etc/hosts"}, "allow", "policy.risk_defaults.read_only"),
        ("deploy_web", {}, "ask", "policy.rules[4]"),
        ("drop_database", {}, "deny", "policy.risk_defaults.destructive"),
        ("never_heard_of", {}, "ask", "policy.risk_defaults.write"),
        ("Bash", {"command": "ls $(ls)"}, "ask", "builtin.shell_hazards"),
    ],
)
def test_explain_decisions(
    capsys: pytest.CaptureFixture[str], tool: str, args: dict[str, str], decision: str, rule: str
) -> None:
    code, out, _ = run(
        capsys, "explain", "--config", LOCAL, "--tool", tool, "--args", json.dumps(args), "--json"
    )
    assert code == 0
    assert (json.loads(out)["decision"], json.loads(out)["rule"]) == (decision, rule)


def test_explain_ask_names_approvers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "--config", LOCAL, "--tool", "deploy_web")
    assert code == 0
    assert out.startswith("ASK  (policy.rules[4])")
    assert "approvers: me" in out


def test_explain_says_what_an_approver_may_remember(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "tapgate.yaml"
    config.write_text(
        "approvers: [{name: me}]\n"
        "policy:\n"
        "  always_ttl: 2d\n"
        "  tools: {restart: {always_uses: 1}, rotate: {remember: [once, session]}}\n"
        "  rules: [{tool: '*', action: ask}]\n"
    )
    code, out, _ = run(capsys, "explain", "--config", str(config), "--tool", "restart")
    assert code == 0 and "  may remember: always, once, session (Always: once, within 2d)" in out
    code, out, _ = run(capsys, "explain", "--config", str(config), "--tool", "rotate", "--json")
    result = json.loads(out)
    assert (result["remember"], "always" in result) == (["once", "session"], False)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "--config", LOCAL, "--tool", "x", "--args", "{not json"], "not valid JSON"),
        (["explain", "--config", LOCAL, "--tool", "x", "--args", "[1]"], "must be a JSON object"),
        (["explain", "--config", "/nonexistent/tapgate.yaml", "--tool", "x"], "/nonexistent"),
        (["check-config", "--config", "/nonexistent/tapgate.yaml"], "/nonexistent"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_config_error_names_the_yaml_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy:\n  rules:\n    - {tool: 5, action: allow}\n")
    code, _, err = run(capsys, "check-config", "--config", str(bad))
    assert code == 2
    assert "policy.rules[0].tool" in err


def test_check_config(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check-config", "--config", LOCAL)
    assert code == 0
    assert "config OK" in out
    assert "channels: console" in out


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://tapgate:S3cretPW@db/tapgate",
        "postgresql://tapgate@db/tapgate?password=S3cretPW&sslmode=require",
    ],
)
def test_check_config_and_the_config_repr_never_show_the_database_password(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str
) -> None:
    """asyncpg also reads ``?password=``, which SQLAlchemy's hide_password leaves alone."""
    config = tmp_path / "tapgate.yaml"
    config.write_text(
        f'store: {{url: "{url}"}}\n'
        'agents: [{name: a, token: "a-token-of-some-length"}]\n'
        "approvers: [{name: alice}]\n"
    )
    code, out, _ = run(capsys, "check-config", "--config", str(config))
    assert code == 0 and "store: postgresql://tapgate" in out and "S3cretPW" not in out
    assert "S3cretPW" not in repr(load_config(str(config)))


async def test_db_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    # main() runs its own event loop: call it from a worker thread of this test's loop.
    code = await asyncio.to_thread(main, ["db", "upgrade", "--url", url])
    out, _ = capsys.readouterr()
    assert code == 0
    assert f"database at revision {head_revision()}" in out
    async with await Store.open(url, migrate=False) as store:
        assert await store.is_current()


def test_db_upgrade_of_an_unreachable_postgresql_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run(
        capsys, "db", "upgrade", "--url", f"postgresql://ops:s3cret-pw@127.0.0.1:{port}/tapgate"
    )
    assert code == 2
    assert "s3cret-pw" not in out + err
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert f"cannot reach the database at postgresql://ops:***@127.0.0.1:{port}/tapgate" in line


async def test_db_upgrade_of_a_database_from_a_newer_tapgate_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    await (await Store.open(url)).close()
    with sqlite3.connect(tmp_path / "x.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099'")
    code = await asyncio.to_thread(main, ["db", "upgrade", "--url", url])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert f"cannot migrate the database at {url}: " in line
    assert "'0099'" in line
    assert f"this tapgate knows revisions up to {head_revision()}" in line


def test_explain_shows_quorum_owner_reminders_and_escalation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "tapgate.yaml"
    config.write_text(
        "agents: [{name: ci, token: t0123456789abcdef, owner: al}]\n"
        "approvers: [{name: al}, {name: bo}, {name: cy}]\n"
        "policy:\n"
        "  self_approval: false\n"
        "  remind_every: 10m\n"
        "  rules:\n"
        "    - {tool: deploy, action: ask, approvers: [al, bo], quorum: 2,\n"
        "       escalate_after: 5m, escalate_to: [cy]}\n"
        "    - {tool: ls, action: ask, approvers: [bo], remind_every: 'off'}\n"
    )
    argv = ("explain", "--config", str(config), "--agent", "ci")
    code, out, _ = run(capsys, *argv, "--tool", "deploy")
    assert code == 0
    assert "  quorum: 2 approvals (one deny denies)" in out
    assert "  self-approval: al (the agent's owner) may not approve" in out
    assert "  reminders: every 10m" in out
    assert "  escalation: after 5m to cy" in out
    code, out, _ = run(capsys, *argv, "--tool", "deploy", "--json")
    result = json.loads(out)
    assert (result["quorum"], result["self_approval_refused"]) == (2, "al")
    assert result["escalate"] == {"after": 300.0, "to": ["cy"]}
    code, out, _ = run(capsys, *argv, "--tool", "ls")
    assert "  reminders: off" in out and "quorum" not in out and "escalation" not in out
