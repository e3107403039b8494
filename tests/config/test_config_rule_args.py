"""The config refuses rules that could never match, and names every mistake in one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tapgate.cli import main
from tapgate.config import parse_config
from tapgate.errors import ConfigError, ConfigErrors

ALICE = "U" + "a" * 32


def config(*rules: dict[str, Any], tools: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "approvers": [{"name": "alice", "line": ALICE}],
        "channels": {"line": {"channel_secret": "s", "channel_access_token": "t"}},
        "policy": {
            "default_approvers": ["alice"],
            "tools": tools if tools is not None else {"Bash": {"shell": "command"}},
            "rules": list(rules),
        },
    }


def refused(data: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(data, env={})
    return info.value


def test_an_argument_a_shell_tool_cannot_have_is_refused_with_a_did_you_mean() -> None:
    error = refused(config({"tool": "Bash", "action": "deny", "args": {"cmd": "sudo *"}}))
    assert error.path == "policy.rules[0].args.cmd"
    assert "(did you mean 'command'?)" in error.message


def test_a_declared_argument_is_taken_and_another_refused() -> None:
    tools = {"mcp__github__*": {"arguments": ["owner", "repo"]}}
    ok = {"tool": "mcp__github__create_issue", "action": "deny", "args": {"repo": "secret-*"}}
    parse_config(config(ok, tools=tools), env={})
    typo = {"tool": "mcp__github__create_issue", "action": "deny", "args": {"repos": "x"}}
    error = refused(config(ok, typo, tools=tools))
    assert error.path == "policy.rules[1].args.repos"
    assert "(did you mean 'repo'?)" in error.message
    assert "tool 'mcp__github__create_issue' has no argument 'repos'" in error.message
    assert "policy.tools.mcp__github__*.arguments" in error.message


def test_a_path_glob_that_climbs_is_refused_and_a_dotted_one_taken() -> None:
    taken = {"tool": "Read", "action": "allow", "args": {"file_path": "./notes/*"}}
    parse_config(config(taken), env={})
    climbs = {"tool": "Read", "action": "allow", "args": {"file_path": "../notes/*"}}
    error = refused(config(climbs))
    assert error.path == "policy.rules[0].args.file_path"
    assert "without '..'" in error.message


def test_every_mistake_is_reported_in_one_run() -> None:
    error = refused(
        config(
            {"tool": "Bash", "action": "deny", "args": {"cmd": "sudo *"}},
            {"tool": "Read", "action": "allow", "args": {"path": "a\\b"}},
            {"tool": "Write", "action": "ask", "approvers": ["bob", "carol"]},
        )
    )
    assert isinstance(error, ConfigErrors)
    assert [e.path for e in error.errors] == [
        "policy.rules[2].approvers[0]",
        "policy.rules[2].approvers[1]",
        "policy.rules[0].args.cmd",
        "policy.rules[1].args.path",
    ]


def test_every_shape_mistake_is_reported_in_one_run() -> None:
    data = config({"tool": "Bash", "action": "maybe"}, {"tool": 5, "action": "allow"})
    error = refused(data)
    assert isinstance(error, ConfigErrors)
    assert [e.path for e in error.errors] == ["policy.rules[0].action", "policy.rules[1].tool"]


@pytest.mark.parametrize("command", ["check-config", "serve"])
def test_check_config_and_serve_print_every_mistake(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = config(
        {"tool": "Bash", "action": "deny", "args": {"cmd": "sudo *"}},
        {"tool": "Write", "action": "ask", "approvers": ["bob"]},
    )
    data["store"] = {"url": f"sqlite:///{tmp_path / 'never.db'}"}
    path = tmp_path / "tapgate.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main([command, "--config", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("2 problems in the configuration:")
    assert err[1].startswith("  policy.rules[1].approvers[0]: unknown approver or group 'bob'")
    assert err[2].startswith("  policy.rules[0].args.cmd: tool 'Bash' has no argument 'cmd'")
    assert not (tmp_path / "never.db").exists()
