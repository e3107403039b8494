"""Config mistakes caught at load, all at once and on their YAML path.

Each of these was accepted before and bit later: a request sent to nobody, a
LINE id that never matches a tap, a glob that matches only its own text, one
missing variable per run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tapgate.config import load_config, load_store_config, parse_config
from tapgate.errors import ConfigError

ROOT = Path(__file__).parents[2]
LINE_ID = "U0123456789abcdef0123456789abcdef"
LINE = {"channel_access_token": "line-token", "channel_secret": "line-secret"}
SLACK = {"bot_token": "xoxb-token", "signing_secret": "slack-secret"}


def refused(data: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, env={})
    return caught.value


def chat_config(policy: dict[str, Any], **channels: Any) -> dict[str, Any]:
    return {
        "agents": [{"name": "ci", "token": "ci-token-0123456789"}],
        "approvers": [
            {"name": "alice", "line": LINE_ID, "groups": ["oncall"]},
            {"name": "bob", "groups": ["oncall", "night"]},
        ],
        "channels": channels or {"line": LINE},
        "policy": policy,
    }


@pytest.mark.parametrize(
    ("policy", "rule", "via"),
    [
        ({"rules": [{"tool": "deploy", "action": "ask", "approvers": ["bob"]}]}, "rules[0]", ""),
        (
            {"rules": [{"tool": "deploy", "action": "ask", "approvers": ["night"]}]},
            "rules[0]",
            "night",
        ),
        ({"default_approvers": ["oncall"]}, "default_approvers[0]", "oncall"),
        (
            {"agents": {"ci": {"rules": [{"tool": "x", "action": "ask", "approvers": ["bob"]}]}}},
            "agents.ci.rules[0]",
            "",
        ),
    ],
)
def test_an_approver_no_enabled_channel_reaches_is_refused_with_both_paths(
    policy: dict[str, Any], rule: str, via: str
) -> None:
    """LINE on, bob has no LINE id: a request asking bob used to wait for nobody."""
    error = refused(chat_config(policy))
    assert error.path == "approvers[1]"
    assert f"policy.{rule} asks them" in error.message
    assert "no address on any enabled channel (line)" in error.message
    assert (f"through group {via!r}" in error.message) == bool(via)


def test_the_console_reaches_everyone_and_an_unasked_approver_is_allowed() -> None:
    asks_bob = {"rules": [{"tool": "deploy", "action": "ask", "approvers": ["bob"]}]}
    parse_config(chat_config(asks_bob, line=LINE, console={"enabled": True}), env={})
    # bob is asked by nobody by name: kept for `tapgate resolve --as bob`, reachable or not.
    parse_config(chat_config({"rules": [{"tool": "x", "action": "ask", "approvers": ["alice"]}]}))


def test_a_config_where_nobody_can_be_reached_is_refused() -> None:
    data = chat_config({})
    data["approvers"] = [{"name": "bob"}]
    error = refused(data)
    assert error.path == "approvers"
    assert "wait for nobody" in error.message


def test_every_missing_environment_variable_is_named_in_one_error() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(ROOT / "config.example.yaml", env={})
    error = caught.value
    assert error.path == "agents[0].token"
    for name in (
        "TAPGATE_CLAUDE_CODE_TOKEN",
        "TAPGATE_DEPLOYER_TOKEN",
        "LINE_CHANNEL_ACCESS_TOKEN",
        "LINE_CHANNEL_SECRET",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
    ):
        assert name in error.message
    assert error.message.startswith("6 environment variables are not set:")
    assert "LINE_CHANNEL_SECRET (channels.line.channel_secret)" in error.message


def test_one_missing_variable_used_twice_is_named_once_with_both_places() -> None:
    data = {"agents": [{"name": "a", "token": "${T}"}, {"name": "b", "token": "${T}"}]}
    error = refused(data)
    assert error.message == "environment variable is not set: T (agents[0].token, agents[1].token)"


@pytest.mark.parametrize(
    ("approver", "path", "words"),
    [
        ({"line": "alice123"}, "approvers[0].line", "LINE user id"),
        ({"line": "U0123456789ABCDEF0123456789ABCDEF"}, "approvers[0].line", "lower-case"),
        ({"line": LINE_ID + "0"}, "approvers[0].line", "32"),
        ({"slack": "alice"}, "approvers[0].slack", "Slack member id"),
        ({"slack": "T0123ABCDEF"}, "approvers[0].slack", "U or W"),
        ({"slack": "U0123abc"}, "approvers[0].slack", "upper-case"),
    ],
)
def test_platform_ids_have_their_platforms_shape(
    approver: dict[str, str], path: str, words: str
) -> None:
    error = refused({"approvers": [{"name": "alice", **approver}]})
    assert (error.path, words in error.message) == (path, True)


@pytest.mark.parametrize("slack", ["U0123ABCDEF", "W0123ABCDEF"])
def test_slack_user_and_enterprise_ids_are_accepted(slack: str) -> None:
    parse_config({"approvers": [{"name": "alice", "line": LINE_ID, "slack": slack}]}, env={})


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"rules": [{"tool": "deploy_[", "action": "ask"}]}, "policy.rules[0].tool"),
        (
            {"rules": [{"tool": "Bash", "action": "deny", "args": {"command": "rm [!"}}]},
            "policy.rules[0].args.command",
        ),
        ({"tools": {"deploy_[": {"risk": "destructive"}}}, 'policy.tools["deploy_["]'),
    ],
)
def test_a_glob_that_cannot_mean_what_was_written_names_its_path(
    policy: dict[str, Any], path: str
) -> None:
    error = refused({"policy": policy})
    assert error.path == path
    assert "unclosed [" in error.message
    assert "[[]" in error.message  # how to write a literal bracket


def test_bracket_globs_that_close_still_load() -> None:
    rules = [
        {"tool": "deploy_[[]x", "action": "ask"},
        {"tool": "deploy_[!a]*", "action": "ask"},
        {"tool": "t", "action": "allow", "args": {"c": "[]]"}},
    ]
    parse_config({"policy": {"rules": rules}}, env={})


def test_the_store_config_reads_no_chat_secret_and_no_token(tmp_path: Path) -> None:
    """What `pending`, `resolve`, `grants` and `audit` load: the store and approver names."""
    path = tmp_path / "tapgate.yaml"
    path.write_text(
        "store: {url: '${STORE_URL:-sqlite:///ops.db}'}\n"
        "agents: [{name: ci, token: '${AGENT_TOKEN}'}]\n"
        "approvers: [{name: alice, line: '${ALICE_LINE}', groups: [oncall]}]\n"
        "channels: {line: {channel_access_token: '${LINE_TOKEN}', channel_secret: '${S}'}}\n"
    )
    config = load_store_config(path, env={})
    assert config.store_url == "sqlite:///ops.db"
    assert [(a.name, a.groups) for a in config.approvers] == [("alice", ("oncall",))]
    assert config.directory().get("alice") is not None
    with pytest.raises(ConfigError, match="4 environment variables"):
        load_config(path, env={})
