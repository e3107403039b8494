"""``tapgate serve`` and the operator's commands as an operator meets them.

Real processes of the installed ``tapgate`` script: what they print, their
exit status, the environment they are started in.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tapgate.cli.parser import build_parser

TAPGATE = str(Path(sys.executable).with_name("tapgate"))
ROOT = Path(__file__).parents[2]
LINE_ID = "U0123456789abcdef0123456789abcdef"


def tapgate(
    *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the script; ``env`` is added to this process's environment (without secrets)."""
    environ = {k: v for k, v in os.environ.items() if k != "TAPGATE_CONFIG" and k not in SECRETS}
    return subprocess.run(
        [TAPGATE, *argv],
        env={**environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    return line


def chat_config(tmp_path: Path, port: int = 8080) -> Path:
    """LINE and Slack with every secret from the environment, as config.example.yaml has it."""
    path = tmp_path / "tapgate.yaml"
    path.write_text(
        f"server: {{host: 127.0.0.1, port: {port}, public_url: 'https://gate.example.com/'}}\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'ops.db'}'}}\n"
        "agents: [{name: ci, token: '${CI_TOKEN}'}]\n"
        f"approvers: [{{name: alice, line: '{LINE_ID}', groups: [oncall]}}, {{name: ops}}]\n"
        "channels:\n"
        "  line: {channel_access_token: '${LINE_TOKEN}', channel_secret: '${LINE_SECRET}',"
        " api_base_url: 'http://127.0.0.1:9'}\n"
        "  slack: {bot_token: '${SLACK_BOT_TOKEN}', signing_secret: '${SLACK_SECRET}'}\n"
        "policy: {rules: [{tool: deploy, action: ask, approvers: [oncall]}]}\n"
    )
    return path


SECRETS = {
    "CI_TOKEN": "ci-token-0123456789",
    "LINE_TOKEN": "line-token",
    "LINE_SECRET": "line-secret",
    "SLACK_BOT_TOKEN": "xoxb-slack",
    "SLACK_SECRET": "slack-secret",
}


def without_secrets() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SECRETS}


def test_operator_commands_work_with_the_chat_secrets_unset(tmp_path: Path) -> None:
    config = str(chat_config(tmp_path))
    environ = without_secrets()
    assert tapgate("db", "upgrade", "--config", config, env=environ).returncode == 0
    for argv in (["pending"], ["grants", "list"], ["audit"], ["audit", "verify"]):
        result = tapgate(*argv, "--config", config, env=environ)
        assert result.returncode == 0, (argv, result.stderr)
    pending = tapgate("pending", "--config", config, env=environ)
    assert pending.stdout == "no pending requests\n"
    # resolve still knows the approvers by name (here: one with no chat id at all).
    resolve = tapgate("resolve", "nope", "approve", "--as", "ops", "--config", config, env=environ)
    assert "no approver named" not in resolve.stderr
    assert "environment variable" not in resolve.stderr
    # The server and check-config still need every one of them, all named at once.
    line = one_line(tapgate("check-config", "--config", config, env=environ))
    assert "5 environment variables are not set" in line


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = tapgate(
            "serve", "--config", str(chat_config(tmp_path)), "--port", str(port), env=SECRETS
        )
    line = one_line(result)
    assert line.startswith(f"tapgate: error: cannot listen on 127.0.0.1:{port}: address already")
    assert not (tmp_path / "ops.db").exists()  # refused before the store was opened


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_bad_port_is_one_line_and_exit_2(tmp_path: Path, port: str) -> None:
    result = tapgate("serve", "--config", str(chat_config(tmp_path)), "--port", port, env=SECRETS)
    assert one_line(result).startswith("tapgate: error: --port: ")


def test_serve_without_a_config_refuses_and_points_at_the_example(tmp_path: Path) -> None:
    line = one_line(tapgate("serve", cwd=tmp_path))
    assert "examples/local.yaml" in line
    assert not list(tmp_path.iterdir())  # no tapgate.db appeared


def test_serve_refuses_an_approver_nobody_can_reach(tmp_path: Path) -> None:
    config = chat_config(tmp_path)
    config.write_text(config.read_text().replace("approvers: [oncall]", "approvers: [ops]"))
    line = one_line(tapgate("serve", "--config", str(config), env=SECRETS))
    assert line.startswith("tapgate: error: approvers[1]: 'ops' has no address")
    assert "policy.rules[0] asks them" in line


def test_serve_says_what_it_loaded_and_when_it_stops(tmp_path: Path) -> None:
    """On ``--port 0`` too: the listening line names the port the system gave, which answers."""
    config = chat_config(tmp_path)
    text = config.read_text().replace(
        f"store: {{url: 'sqlite:///{tmp_path / 'ops.db'}'}}", "store: {url: 'sqlite:///rel.db'}"
    )
    config.write_text(text)
    log = (tmp_path / "serve.log").open("w")  # the child keeps its own copy
    server = subprocess.Popen(
        [TAPGATE, "serve", "--config", str(config), "--port", "0"],
        env={**os.environ, **SECRETS},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    log.close()
    assert server.stdout is not None
    lines = []
    for line in server.stdout:
        lines.append(line)
        if "listening on" in line:
            break
    listening = re.search(r"tapgate listening on http://127\.0\.0\.1:(\d+) ", lines[-1])
    assert listening is not None, lines
    port = int(listening.group(1))
    assert port not in (0, 8080)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
        assert answer.status == 200
    server.send_signal(signal.SIGTERM)
    rest, _ = server.communicate(timeout=30)
    banner = "".join(lines)
    assert f"config:    {config}" in banner
    assert f"store:     sqlite:///rel.db ({tmp_path / 'rel.db'}" in banner
    assert "agents:    ci\n" in banner
    assert "approvers: alice (line), ops (unreachable)" in banner
    assert "channels:  line, slack" in banner
    assert "webhook:   line https://gate.example.com/webhooks/line" in banner
    assert "webhook:   slack https://gate.example.com/webhooks/slack" in banner
    assert "warning:   approver 'ops' has no address on an enabled channel" in banner
    assert f"tapgate listening on http://127.0.0.1:{port}" in banner
    assert "\x1b[" not in banner  # not a terminal: no colour
    assert "tapgate stopped" in rest
    assert server.returncode == 0
    assert not any(secret in banner + rest for secret in SECRETS.values())
    logged = (tmp_path / "serve.log").read_text()
    # $SLACK_BOT_TOKEN is set, as the docs advise: bolt no longer warns it is unused.
    assert "INFO" in logged
    assert "will be unused" not in logged


def test_explain_refuses_an_agent_the_config_does_not_list() -> None:
    local = str(ROOT / "examples" / "local.yaml")
    line = one_line(tapgate("explain", "--config", local, "--tool", "x", "--agent", "ghost"))
    assert "unknown agent 'ghost'" in line
    assert "local-agent" in line
    ok = tapgate("explain", "--config", local, "--tool", "deploy_x", "--agent", "local-agent")
    assert ok.returncode == 0
    assert "timeout 15m" in ok.stdout


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += _parsers(child)
    return found


def test_every_option_is_described_and_no_help_shows_markup() -> None:
    for parser in _parsers(build_parser()):
        assert "``" not in parser.format_help(), parser.prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{parser.prog} {action.option_strings or action.dest}"
            assert action.metavar != "AS_"
    help_text = tapgate("resolve", "--help").stdout
    assert "--as NAME" in help_text


@pytest.mark.parametrize("command", [["run"], ["hook", "claude-code"]])
def test_run_and_hook_list_their_exit_statuses(command: list[str]) -> None:
    shown = tapgate(*command, "--help").stdout
    assert "exit status:" in shown
    assert ("77" in shown) if command == ["run"] else ("always" in shown)
