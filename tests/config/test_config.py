"""tapgate.config: YAML → validated Config → core PolicySpec / Directory.

Every failure must be one ConfigError naming the YAML path, and no secret may
leak through repr, str or a traceback.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml

from tapgate.channels.line.settings import LineConfig
from tapgate.channels.slack.settings import SlackConfig
from tapgate.config import (
    Config,
    ServerConfig,
    StoreConfig,
    display_url,
    load_config,
    parse_config,
    parse_duration,
)
from tapgate.errors import ConfigError, ConfigErrors
from tapgate.gate.directory import Approver
from tapgate.policy.rules import DEFAULT_RISK_ACTIONS, Rule, ToolSpec

REPO = Path(__file__).resolve().parents[2]

TOKEN_A = "agent-token-aaaaaaaaaaaa"
TOKEN_B = "agent-token-bbbbbbbbbbbb"

FULL_YAML = """
server: {host: 0.0.0.0, port: 9000, public_url: "https://gate.example.com"}
store: {url: "postgresql://tapgate:${PG_PASSWORD}@db/tapgate"}
agents:
  - {name: coder, token: "${CODER_TOKEN}"}
  - {name: deployer, token: "${DEPLOYER_TOKEN}"}
approvers:
  - name: alice
    line: U0123456789abcdef0123456789abcdef
    slack: USLACKALICE
    slack_team: T0001
    groups: [oncall, leads]
  - {name: bob, slack: USLACKBOB, groups: [oncall]}
  - {name: carol}
channels:
  line: {channel_access_token: "${LINE_TOKEN}", channel_secret: "${LINE_SECRET}", timeout: 5}
  slack:
    bot_token: "${SLACK_BOT_TOKEN}"
    signing_secret: "${SLACK_SIGNING_SECRET}"
    app_token: "${SLACK_APP_TOKEN}"
    team_id: T0001
policy:
  default_timeout: 10m
  on_timeout: allow
  default_approvers: [oncall]
  risk_defaults: {write: deny}
  tools:
    Bash: {risk: write, shell: command, prefix_words: 3}
    Read: {risk: read_only}
    write_file: {risk: write, fingerprint: [path]}
  rules:
    - {tool: Bash, args: {command: "git status*"}, action: allow}
    - {tool: "deploy_*", action: ask, approvers: [leads, bob], timeout: 1h30m, reason: "deploys"}
  agents:
    deployer:
      rules:
        - {tool: deploy_staging, action: allow}
        - {tool: deploy_prod, action: ask, timeout: 90}
"""

FULL_ENV = {
    "PG_PASSWORD": "pg-password-secret",
    "CODER_TOKEN": TOKEN_A,
    "DEPLOYER_TOKEN": TOKEN_B,
    "LINE_TOKEN": "line-access-token-secret",
    "LINE_SECRET": "line-channel-secret",
    "SLACK_BOT_TOKEN": "xoxb-slack-bot-secret",
    "SLACK_SIGNING_SECRET": "slack-signing-secret",
    "SLACK_APP_TOKEN": "xapp-slack-app-secret",
}


def write(tmp_path: Path, text: str, name: str = "tapgate.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(data: object, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(data, env={} if env is None else env)
    return info.value


def rule(**fields: Any) -> dict[str, Any]:
    return {"tool": "Bash", "action": "allow", **fields}


@pytest.fixture
def full(tmp_path: Path) -> Config:
    return load_config(write(tmp_path, FULL_YAML), env=FULL_ENV)


# --- a good config ----------------------------------------------------------------


def test_full_config_converts_to_policy_spec(full: Config) -> None:
    spec = full.policy_spec()
    assert spec.tools == (
        ToolSpec(
            name="Bash", risk="write", shell="command", prefix_words=3, source="policy.tools.Bash"
        ),
        ToolSpec(name="Read", risk="read_only", source="policy.tools.Read"),
        ToolSpec(
            name="write_file", risk="write", fingerprint=("path",), source="policy.tools.write_file"
        ),
    )
    assert spec.rules == (
        Rule(
            tool="Bash", action="allow", args={"command": "git status*"}, source="policy.rules[0]"
        ),
        Rule(
            tool="deploy_*",
            action="ask",
            approvers=("leads", "bob"),
            timeout=5400.0,
            reason="deploys",
            source="policy.rules[1]",
        ),
    )
    assert dict(spec.agents) == {
        "deployer": (
            Rule(tool="deploy_staging", action="allow", source="policy.agents.deployer.rules[0]"),
            Rule(
                tool="deploy_prod",
                action="ask",
                timeout=90.0,
                source="policy.agents.deployer.rules[1]",
            ),
        )
    }
    assert dict(spec.risk_actions) == {**DEFAULT_RISK_ACTIONS, "write": "deny"}
    assert spec.default_timeout == 600.0
    assert spec.on_timeout == "allow"
    assert spec.default_approvers == ("oncall",)


def test_full_config_converts_to_directory(full: Config) -> None:
    directory = full.directory()
    assert directory.names == ("alice", "bob", "carol")
    assert directory.channels == ("line", "slack")
    assert directory.get("alice") == Approver(
        name="alice",
        addresses=(("line", "U0123456789abcdef0123456789abcdef"), ("slack", "USLACKALICE")),
        groups=("oncall", "leads"),
        teams=(("slack", "T0001"),),
    )
    assert directory.get("bob") == Approver(
        name="bob", addresses=(("slack", "USLACKBOB"),), groups=("oncall",)
    )
    assert directory.get("carol") == Approver(name="carol")
    assert directory.identify("slack", "USLACKBOB") == "bob"
    assert directory.expand(["leads", "bob"]) == ("alice", "bob")


def test_full_config_sections(full: Config) -> None:
    assert full.server.host == "0.0.0.0"
    assert full.server.port == 9000
    assert full.store_url == "postgresql://tapgate:pg-password-secret@db/tapgate"
    line = full.channels.section("line")
    slack = full.channels.section("slack")
    assert isinstance(line, LineConfig)
    assert isinstance(slack, SlackConfig)
    assert line.channel_secret.get_secret_value() == "line-channel-secret"
    assert line.timeout == 5.0
    assert line.api_base_url == "https://api.line.me"
    assert slack.app_token is not None
    assert slack.app_token.get_secret_value() == "xapp-slack-app-secret"
    assert slack.api_base_url == "https://slack.com/api/"
    assert slack.team_id == "T0001"
    assert full.approvers[0].value("slack_team") == "T0001"
    assert full.approvers[0].team("slack") == "T0001"


def test_empty_document_is_all_defaults() -> None:
    config = parse_config(None, env={})
    assert config.server.host == "127.0.0.1"
    assert config.server.port == 8080
    assert config.server.public_url is None
    assert config.store_url == "sqlite:///tapgate.db"
    assert config.directory().channels == ("console",)
    spec = config.policy_spec()
    assert spec.tools == ()
    assert spec.rules == ()
    assert dict(spec.risk_actions) == dict(DEFAULT_RISK_ACTIONS)
    assert spec.default_timeout == 600.0
    assert spec.on_timeout == "deny"


def test_empty_file_is_all_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing yet\n"), env={}) == Config()


def test_null_value_means_default() -> None:
    config = parse_config(
        {"agents": None, "server": {"port": None}, "policy": {"rules": None}}, env={}
    )
    assert config.agents == ()
    assert config.server.port == 8080
    assert config.policy.rules == ()


LINE = {"channel_access_token": "line-token", "channel_secret": "line-secret"}
SLACK = {"bot_token": "xoxb-1", "signing_secret": "signing"}


@pytest.mark.parametrize(
    ("channels", "expected"),
    [
        ({}, ("console",)),
        ({"line": LINE}, ("line",)),
        ({"slack": SLACK, "line": LINE}, ("line", "slack")),
        ({"console": {}, "slack": SLACK}, ("console", "slack")),
        ({"console": {"enabled": True}, "line": LINE}, ("console", "line")),
        ({"console": {"enabled": False}}, ()),
    ],
)
def test_enabled_channels(channels: dict[str, Any], expected: tuple[str, ...]) -> None:
    config = parse_config({"channels": channels}, env={})
    assert config.enabled_channels == expected
    assert config.directory().channels == expected


def test_port_from_environment_string_is_accepted() -> None:
    config = parse_config({"server": {"port": "${PORT}"}}, env={"PORT": "9090"})
    assert config.server.port == 9090


# --- ${VAR} interpolation ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "env", "expected"),
    [
        ("${HOST}", {"HOST": "gate.local"}, "gate.local"),
        ("a-${X}-b-${Y}", {"X": "1", "Y": "2"}, "a-1-b-2"),
        ("${HOST:-fallback}", {}, "fallback"),
        ("${HOST:-fallback}", {"HOST": ""}, "fallback"),
        ("${HOST:-fallback}", {"HOST": "set"}, "set"),
        ("${HOST:-}x", {}, "x"),
        ("$${HOST}", {"HOST": "ignored"}, "${HOST}"),
        ("cost: $5", {}, "cost: $5"),
        ("${HOST}", {"HOST": "${NOT_EXPANDED}"}, "${NOT_EXPANDED}"),
    ],
)
def test_interpolation(value: str, env: dict[str, str], expected: str) -> None:
    config = parse_config({"server": {"host": value}}, env=env)
    assert config.server.host == expected


def test_interpolation_reaches_lists_and_nested_mappings() -> None:
    data = {
        "approvers": [{"name": "${WHO}", "groups": ["${GROUP}"]}],
        "policy": {"rules": [rule(args={"command": "${CMD} *"}, approvers=["${GROUP}"])]},
    }
    config = parse_config(data, env={"WHO": "alice", "GROUP": "oncall", "CMD": "make"})
    assert config.approvers[0].name == "alice"
    assert config.approvers[0].groups == ("oncall",)
    assert config.policy.rules[0].args == {"command": "make *"}


def test_interpolation_does_not_mutate_input() -> None:
    data = {"server": {"host": "${HOST}"}}
    parse_config(data, env={"HOST": "h"})
    assert data == {"server": {"host": "${HOST}"}}


def test_missing_environment_variable_names_the_path() -> None:
    data = {"channels": {"line": {"channel_access_token": "t", "channel_secret": "${LINE_SECRET}"}}}
    error = config_error(data)
    assert error.path == "channels.line.channel_secret"
    assert error.message == "environment variable LINE_SECRET is not set"
    assert str(error) == (
        "channels.line.channel_secret: environment variable LINE_SECRET is not set"
    )


def test_missing_environment_variable_in_a_list() -> None:
    data = {"agents": [{"name": "a", "token": TOKEN_A}, {"name": "b", "token": "${B_TOKEN}"}]}
    assert config_error(data).path == "agents[1].token"


def test_environment_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAPGATE_TEST_HOST", "from-os")
    assert parse_config({"server": {"host": "${TAPGATE_TEST_HOST}"}}).server.host == "from-os"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${HOST", "unterminated ${"),
        ("${}", "invalid environment reference ${}"),
        ("${1ABC}", "invalid environment reference ${1ABC}"),
        ("${A-b}", "invalid environment reference ${A-b}"),
        ("${A:-${B}}", "nested ${...}"),
    ],
)
def test_malformed_references(value: str, message: str) -> None:
    error = config_error({"server": {"host": value}})
    assert error.path == "server.host"
    assert message in error.message


# --- validation errors and their paths --------------------------------------------


def test_unknown_top_level_key() -> None:
    error = config_error({"polcy": {}})
    assert error.path == "polcy"
    assert error.message == "unknown key 'polcy' (did you mean 'policy'?)"


def test_unknown_nested_key() -> None:
    rules = [rule(), rule(), rule(), {"tols": "Bash", "action": "allow", "tool": "x"}]
    error = config_error({"policy": {"rules": rules}})
    assert error.path == "policy.rules[3].tols"
    assert error.message.startswith("unknown key 'tols'")
    assert "did you mean 'tool'" in error.message


def test_unknown_key_lists_the_allowed_ones_without_a_close_match() -> None:
    error = config_error({"server": {"zzz": 1}})
    keys = ", ".join(ServerConfig.model_fields)  # every key of the section, in order
    assert keys.startswith("host, port, public_url, max_wait")
    assert error.message == f"unknown key 'zzz' (expected one of {keys})"


def test_unknown_key_under_a_tool_and_an_agent_policy() -> None:
    error = config_error({"policy": {"tools": {"Bash": {"shel": "command"}}}})
    assert error.path == "policy.tools.Bash.shel"
    assert "did you mean 'shell'" in error.message
    data = {"agents": [{"name": "a", "token": TOKEN_A}], "policy": {"agents": {"a": {"rule": []}}}}
    error = config_error(data)
    assert error.path == "policy.agents.a.rule"
    assert "did you mean 'rules'" in error.message


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"policy": {"rules": [{"tool": 5, "action": "allow"}]}},
            "policy.rules[0].tool",
            "expected a string",
        ),
        ({"server": {"port": "http"}}, "server.port", "expected an integer"),
        ({"server": {"port": True}}, "server.port", "expected an integer"),
        ({"server": {"port": 8080.5}}, "server.port", "expected an integer"),
        ({"server": {"port": 0}}, "server.port", "must be at least 1"),
        ({"server": {"port": 70000}}, "server.port", "must be at most 65535"),
        ({"server": {"host": 1}}, "server.host", "expected a string"),
        (
            {"server": {"public_url": "gate.example.com"}},
            "server.public_url",
            "expected an http:// or https:// URL",
        ),
        ({"server": []}, "server", "expected a mapping"),
        ({"agents": {"name": "a"}}, "agents", "expected a list"),
        (
            {"approvers": [{"name": "a", "groups": "oncall"}]},
            "approvers[0].groups",
            "expected a list",
        ),
        (
            {"approvers": [{"name": "a", "groups": ["x", 3]}]},
            "approvers[0].groups[1]",
            "expected a string",
        ),
        (
            {"channels": {"console": {"enabled": "maybe"}}},
            "channels.console.enabled",
            "expected true or false",
        ),
        ({"policy": {"rules": "Bash"}}, "policy.rules", "expected a list"),
        (
            {"policy": {"rules": [rule(args={"command": 5})]}},
            "policy.rules[0].args.command",
            "expected a string",
        ),
        (
            {"policy": {"rules": [rule(args=["git *"])]}},
            "policy.rules[0].args",
            "expected a mapping",
        ),
        ({"policy": {"tools": {"Bash": "write"}}}, "policy.tools.Bash", "expected a mapping"),
        (
            {"policy": {"tools": {"mcp.github.*": {"risk": "high"}}}},
            'policy.tools["mcp.github.*"].risk',
            "expected one of read_only, write, destructive",
        ),
        (
            {"policy": {"rules": [{"tool": "Bash"}]}},
            "policy.rules[0]",
            "missing required key 'action'",
        ),
        ({"agents": [{"token": TOKEN_A}]}, "agents[0]", "missing required key 'name'"),
        ([1, 2], "", "expected a mapping"),
    ],
)
def test_wrong_types_name_their_path(data: object, path: str, message: str) -> None:
    error = config_error(data)
    assert (error.path, error.message) == (path, message)


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"policy": {"rules": [rule(action="maybe")]}},
            "policy.rules[0].action",
            "expected one of allow, ask, deny",
        ),
        ({"policy": {"on_timeout": "ask"}}, "policy.on_timeout", "expected one of allow, deny"),
        ({"policy": {"on_timeout": False}}, "policy.on_timeout", "expected one of allow, deny"),
        (
            {"policy": {"risk_defaults": {"write": "approve"}}},
            "policy.risk_defaults.write",
            "expected one of allow, ask, deny",
        ),
        (
            {"policy": {"risk_defaults": {"risky": "allow"}}},
            "policy.risk_defaults.risky",
            "invalid key: expected one of read_only, write, destructive",
        ),
        (
            {"policy": {"tools": {"Read": {"risk": "none"}}}},
            "policy.tools.Read.risk",
            "expected one of read_only, write, destructive",
        ),
    ],
)
def test_bad_enumerated_values(data: object, path: str, message: str) -> None:
    error = config_error(data)
    assert (error.path, error.message) == (path, message)


def test_several_errors_are_all_reported_at_once() -> None:
    """One run names every mistake: fixing one only to be shown the next cost a run each."""
    error = config_error({"server": {"host": 1, "port": "x"}, "policy": {"on_timeout": "ask"}})
    assert isinstance(error, ConfigErrors)
    assert (error.path, error.message) == ("server.host", "expected a string")
    assert [(e.path, e.message) for e in error.errors] == [
        ("server.host", "expected a string"),
        ("server.port", "expected an integer"),
        ("policy.on_timeout", "expected one of allow, deny"),
    ]
    assert str(error).splitlines() == [
        "3 problems in the configuration:",
        "  server.host: expected a string",
        "  server.port: expected an integer",
        "  policy.on_timeout: expected one of allow, deny",
    ]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"policy": {"rules": [rule(tool="")]}}, "policy.rules[0].tool"),
        ({"policy": {"rules": [rule(tool="  ")]}}, "policy.rules[0].tool"),
        ({"policy": {"rules": [rule(args={"command": ""})]}}, "policy.rules[0].args.command"),
        ({"policy": {"rules": [rule(args={"": "x"})]}}, 'policy.rules[0].args[""]'),
        ({"policy": {"tools": {"": {}}}}, 'policy.tools[""]'),
        ({"policy": {"tools": {"Bash": {"shell": ""}}}}, "policy.tools.Bash.shell"),
        ({"policy": {"tools": {"W": {"fingerprint": [""]}}}}, "policy.tools.W.fingerprint[0]"),
        ({"agents": [{"name": "", "token": TOKEN_A}]}, "agents[0].name"),
        ({"approvers": [{"name": "a", "slack": ""}]}, "approvers[0].slack"),
    ],
)
def test_empty_names_and_globs_are_rejected(data: object, path: str) -> None:
    error = config_error(data)
    assert error.path == path
    assert "must not be empty" in error.message


def test_prefix_words_must_be_positive() -> None:
    error = config_error({"policy": {"tools": {"Bash": {"shell": "command", "prefix_words": 0}}}})
    assert (error.path, error.message) == ("policy.tools.Bash.prefix_words", "must be at least 1")


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("line", "channel_access_token"),
        ("line", "channel_secret"),
        ("slack", "bot_token"),
        ("slack", "signing_secret"),
        ("slack", "app_token"),
    ],
)
def test_secrets_must_not_be_empty_after_interpolation(section: str, key: str) -> None:
    values = {**(LINE if section == "line" else SLACK), key: "${EMPTY}"}
    error = config_error({"channels": {section: values}}, env={"EMPTY": ""})
    assert (error.path, error.message) == (f"channels.{section}.{key}", "must not be empty")


def test_agent_tokens_must_be_long_and_present() -> None:
    error = config_error({"agents": [{"name": "a", "token": "${T:-}"}]})
    assert (error.path, error.message) == ("agents[0].token", "must not be empty")
    error = config_error({"agents": [{"name": "a", "token": "short-token"}]})
    assert (error.path, error.message) == ("agents[0].token", "must be at least 16 characters")


@pytest.mark.parametrize(
    "url", ["sqlite:///tapgate.db", "sqlite:////var/lib/tapgate.db", "postgresql://u:p@db/x"]
)
def test_store_url_accepts_sqlite_and_postgresql(url: str) -> None:
    assert parse_config({"store": {"url": url}}, env={}).store_url == url


@pytest.mark.parametrize(
    "url", ["mysql://db/x", "postgres://db/x", "sqlite://", "tapgate.db", "postgresql://"]
)
def test_store_url_rejects_other_schemes(url: str) -> None:
    error = config_error({"store": {"url": url}})
    assert error.path == "store.url"
    assert "sqlite:///" in error.message


# --- cross-field checks -----------------------------------------------------------


def test_duplicate_agent_names() -> None:
    agents = [{"name": "a", "token": TOKEN_A}, {"name": "a", "token": TOKEN_B}]
    error = config_error({"agents": agents})
    assert error.path == "agents[1].name"
    assert "duplicate agent name 'a'" in error.message


def test_duplicate_agent_tokens_do_not_echo_the_token() -> None:
    agents = [{"name": "a", "token": TOKEN_A}, {"name": "b", "token": TOKEN_A}]
    error = config_error({"agents": agents})
    assert error.path == "agents[1].token"
    assert "duplicate token" in error.message
    assert TOKEN_A not in str(error)


def test_duplicate_approver_names() -> None:
    error = config_error({"approvers": [{"name": "alice"}, {"name": "bob"}, {"name": "alice"}]})
    assert error.path == "approvers[2].name"
    assert "duplicate approver name 'alice'" in error.message


def test_approver_names_differing_only_in_case_are_duplicates() -> None:
    error = config_error({"approvers": [{"name": "Alice"}, {"name": "alice"}]})
    assert error.path == "approvers[1].name"
    assert "duplicate approver name 'alice' (also approvers[0]" in error.message


def test_approver_name_must_not_be_a_group_name() -> None:
    error = config_error({"approvers": [{"name": "alice", "groups": ["bob"]}, {"name": "bob"}]})
    assert (error.path, error.message) == ("approvers[1].name", "'bob' is also a group name")


APPROVERS = [{"name": "alice", "groups": ["oncall"]}]


def test_unknown_approver_in_a_rule() -> None:
    rules = [rule(action="ask"), rule(action="ask", approvers=["oncall", "bob"])]
    error = config_error({"approvers": APPROVERS, "policy": {"rules": rules}})
    assert str(error) == "policy.rules[1].approvers[1]: unknown approver or group 'bob'"


def test_unknown_default_approver() -> None:
    error = config_error({"approvers": APPROVERS, "policy": {"default_approvers": ["ops"]}})
    assert str(error) == "policy.default_approvers[0]: unknown approver or group 'ops'"


def test_unknown_approver_in_an_agent_rule() -> None:
    data = {
        "agents": [{"name": "deployer", "token": TOKEN_A}],
        "approvers": APPROVERS,
        "policy": {"agents": {"deployer": {"rules": [rule(approvers=["alice", "zed"])]}}},
    }
    error = config_error(data)
    assert error.path == "policy.agents.deployer.rules[0].approvers[1]"


def test_unknown_agent_under_policy_agents() -> None:
    data = {
        "agents": [{"name": "deployer", "token": TOKEN_A}],
        "policy": {"agents": {"deployer": {}, "ghost": {"rules": []}}},
    }
    error = config_error(data)
    assert error.path == "policy.agents.ghost"
    assert "unknown agent 'ghost'" in error.message


def test_constructing_config_directly_still_cross_checks() -> None:
    with pytest.raises(ConfigError, match=r"^policy\.agents\.ghost: "):
        Config.model_validate({"policy": {"agents": {"ghost": {}}}})


# --- durations --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (90, 90.0),
        (1.5, 1.5),
        ("90", 90.0),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
        ("1d2h3m4s", 93784.0),
        ("0.5h", 1800.0),
        (" 15m ", 900.0),
    ],
)
def test_parse_duration(value: str | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    "value", ["", "10x", "m", "30m1h", "1h 30m", "-5", "5 minutes", "1.h", "10M"]
)
def test_parse_duration_rejects_malformed_text(value: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_duration(value)


@pytest.mark.parametrize("value", [0, -1, 0.0, "0s", "0"])
def test_parse_duration_rejects_non_positive(value: str | float) -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        parse_duration(value)


def test_parse_duration_rejects_infinity_and_non_numbers() -> None:
    with pytest.raises(ValueError, match="finite"):
        parse_duration(float("inf"))
    with pytest.raises(TypeError):
        parse_duration(True)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"policy": {"default_timeout": "10 minutes"}}, "policy.default_timeout"),
        ({"policy": {"default_timeout": 0}}, "policy.default_timeout"),
        ({"policy": {"default_timeout": [10]}}, "policy.default_timeout"),
        ({"policy": {"rules": [rule(timeout="soon")]}}, "policy.rules[0].timeout"),
        ({"channels": {"line": {**LINE, "timeout": "-1s"}}}, "channels.line.timeout"),
    ],
)
def test_bad_durations_name_their_path(data: object, path: str) -> None:
    error = config_error(data)
    assert error.path == path
    assert "duration" in error.message


# --- files ------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(missing, env={})
    assert info.value.path == ""
    assert str(missing) in info.value.message
    assert "No such file or directory" in info.value.message


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path, env={})


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"server: {host: \xe9}\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path, env={})


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "server:\n  port: 8080\n   host: x\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.path == ""
    assert info.value.message.startswith(f"{path}: invalid YAML at line 3, column 8: ")


def test_yaml_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    text = "policy:\n  rules: []\n  on_timeout: deny\n  rules:\n    - {tool: x, action: allow}\n"
    with pytest.raises(ConfigError, match=r"line 4, column 3: duplicate key 'rules'"):
        load_config(write(tmp_path, text), env={})


def test_load_config_accepts_str_path(tmp_path: Path) -> None:
    path = write(tmp_path, "server: {port: 1234}\n")
    assert load_config(str(path), env={}).server.port == 1234


def test_validation_errors_from_a_file_name_the_yaml_path(tmp_path: Path) -> None:
    path = write(tmp_path, "policy:\n  rules:\n    - {tool: 5, action: allow}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert str(info.value) == "policy.rules[0].tool: expected a string"


# --- secrets ----------------------------------------------------------------------


def test_secrets_are_not_in_repr_or_str(full: Config) -> None:
    for text in (repr(full), str(full), repr(full.channels), str(full.agents)):
        for secret in FULL_ENV.values():
            assert secret not in text
    assert "postgresql://tapgate:***@db/tapgate" in repr(full.store)


def test_secrets_are_not_in_error_tracebacks() -> None:
    data = {
        "agents": [{"name": "a", "token": TOKEN_A}],
        "channels": {"slack": {"bot_token": "xoxb-very-secret", "signing_secret": 5}},
    }
    error = config_error(data)
    assert error.path == "channels.slack.signing_secret"
    text = "".join(traceback.format_exception(error))
    assert "xoxb-very-secret" not in text
    assert TOKEN_A not in text


def test_secrets_on_a_yaml_error_line_are_not_in_the_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "agents:\n  - {name: a, token: hunter2-hunter2-hunter2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert "hunter2" not in "".join(traceback.format_exception(info.value))


# --- agent tokens -----------------------------------------------------------------


def test_agent_for_token(full: Config) -> None:
    assert full.agent_for_token(TOKEN_A) == "coder"
    assert full.agent_for_token(TOKEN_B) == "deployer"
    assert full.agent_for_token(TOKEN_A[:-1]) is None
    assert full.agent_for_token(TOKEN_A + "x") is None
    assert full.agent_for_token("") is None
    assert full.agent_for_token("jeton-accentué-très-long") is None


def test_agent_for_token_without_agents() -> None:
    assert parse_config({}, env={}).agent_for_token(TOKEN_A) is None


# --- the shipped example ----------------------------------------------------------

EXAMPLE = REPO / "config.example.yaml"
EXAMPLE_ENV = {
    "TAPGATE_CLAUDE_CODE_TOKEN": "fake-claude-code-token-0001",
    "TAPGATE_DEPLOYER_TOKEN": "fake-deployer-token-000002",
    "LINE_CHANNEL_ACCESS_TOKEN": "fake-line-access-token",
    "LINE_CHANNEL_SECRET": "fake-line-secret",
    "SLACK_BOT_TOKEN": "xoxb-fake",
    "SLACK_SIGNING_SECRET": "fake-signing-secret",
}


def test_example_references_only_known_variables() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    values = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    required = set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}", values))
    assert required == set(EXAMPLE_ENV)


def test_example_loads() -> None:
    config = load_config(EXAMPLE, env=EXAMPLE_ENV)
    assert config.enabled_channels == ("line", "slack")
    assert config.store_url == "sqlite:///tapgate.db"
    assert config.agent_for_token(EXAMPLE_ENV["TAPGATE_DEPLOYER_TOKEN"]) == "deployer"
    spec = config.policy_spec()
    tools = {tool.name: tool for tool in spec.tools}
    assert tools["Bash"].shell == "command"
    assert {tools[name].risk for name in ("Read", "Glob", "Grep")} == {"read_only"}
    assert tools["Edit"].fingerprint == ("file_path",)
    assert tools["Write"].fingerprint == ("file_path",)
    by_command = {
        r.args.get("command"): r.action for r in spec.rules if r.tool == "Bash" and r.args
    }
    assert by_command["git status*"] == "allow"
    assert by_command["rm -rf /*"] == "deny"
    assert by_command["git push --force*"] == "deny"
    deploy = next(r for r in spec.rules if r.tool == "deploy_*")
    assert (deploy.action, deploy.approvers, deploy.timeout) == ("ask", ("oncall",), 900.0)
    assert "deployer" in spec.agents


def test_example_keeps_every_secret_in_the_environment() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    secrets = [agent["token"] for agent in raw["agents"]]
    secrets += [raw["channels"]["line"][key] for key in ("channel_access_token", "channel_secret")]
    secrets += [raw["channels"]["slack"][key] for key in ("bot_token", "signing_secret")]
    assert all(re.fullmatch(r"\$\{[A-Z_]+\}", value) for value in secrets)


def test_max_wait_leaves_room_for_the_clients_long_polls() -> None:
    error = config_error({"server": {"max_wait": "30s"}})
    assert error.path == "server.max_wait"
    assert "at least 60s" in error.message


@pytest.mark.parametrize("value", ["0s", 0])
def test_a_body_timeout_must_leave_time_for_a_body(value: object) -> None:
    error = config_error({"server": {"body_timeout": value}})
    assert error.path == "server.body_timeout"
    assert "greater than 0" in error.message


def test_the_body_timeout_defaults_to_ten_seconds() -> None:
    assert parse_config({}, env={}).server.body_timeout == 10.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "errors"),
        ("access_log: off", "off"),  # YAML 1.1 reads a bare off as false
        ("access_log: on", "all"),
        ("access_log: errors", "errors"),
        ("access_log: all", "all"),
        ('access_log: "off"', "off"),
    ],
)
def test_the_access_log_setting(tmp_path: Path, text: str, expected: str) -> None:
    config = load_config(write(tmp_path, f"server: {{{text}}}\n"), env={})
    assert config.server.access_log == expected


@pytest.mark.parametrize("value", ["none", "verbose", 1])
def test_an_unknown_access_log_setting_names_its_path(value: object) -> None:
    error = config_error({"server": {"access_log": value}})
    assert error.path == "server.access_log"
    assert "expected one of off, errors, all" in error.message


def test_the_max_wait_floor_is_the_clients_slice() -> None:
    from tapgate.client import LONG_POLL
    from tapgate.config.server import _CLIENT_SLICE

    assert _CLIENT_SLICE == LONG_POLL


LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agents: &a [*a]\n", "nested too deeply"),
        ("agents: " + "[" * 600 + "]" * 600 + "\n", "nested too deeply"),
        (LAUGHS, "more than 100,000 values"),
        ("? [a, b]\n: 1\n", "unhashable key"),
    ],
    ids=["recursive-alias", "deep-nesting", "billion-laughs", "complex-key"],
)
def test_hostile_yaml_is_a_config_error(tmp_path: Path, text: str, message: str) -> None:
    """Never a traceback, and never gigabytes: aliases are counted once expanded."""
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text), env={})


def test_yaml_merge_keys_work_and_explicit_keys_override_them(tmp_path: Path) -> None:
    text = (
        "agents:\n"
        '  - &base {name: ci, token: "a-token-of-some-length"}\n'
        '  - {<<: *base, name: nightly, token: "another-token-of-length"}\n'
    )
    config = load_config(write(tmp_path, text), env={})
    assert [agent.name for agent in config.agents] == ["ci", "nightly"]


@pytest.mark.parametrize(
    ("text", "env", "where", "message"),
    [
        (
            'agents: [{name: ci, token: "${CI_TOKEN}"}]\n',
            {"CI_TOKEN": "a-token-of-some-length\n"},  # read from a secret file
            "agents[0].token",
            "whitespace",
        ),
        ("agents: [{name: ci, token: !!binary YWJj}]\n", {}, "agents[0].token", "a string"),
        ("policy: {default_timeout: 99999999999d}\n", {}, "policy.default_timeout", "366 days"),
        ("server: {max_wait: 400d}\n", {}, "server.max_wait", "366 days"),
    ],
    ids=["secret-with-newline", "binary-token", "huge-timeout", "huge-max-wait"],
)
def test_values_that_would_only_fail_at_run_time_are_refused(
    tmp_path: Path, text: str, env: dict[str, str], where: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(write(tmp_path, text), env=env)
    assert caught.value.path == where
    assert "a-token-of-some-length" not in str(caught.value)


@pytest.mark.parametrize(
    "approvers",
    [
        '[{name: alice, line: "U0123456789abcdef0123456789abcdef"},'
        ' {name: bob, line: "U0123456789abcdef0123456789abcdef"}]',
        '[{name: alice, slack: "U1"}, {name: bob, slack: "U1"}]',
        '[{name: alice, slack: "U1", slack_team: T1}, {name: bob, slack: "U1", slack_team: T1}]',
        '[{name: alice, slack: "U1"}, {name: bob, slack: "U1", slack_team: T2}]',
    ],
)
def test_two_approvers_with_one_platform_id_are_refused(tmp_path: Path, approvers: str) -> None:
    """A tap names one person: taps used to go to whichever approver came last."""
    with pytest.raises(ConfigError, match=r"same .* user id as approvers\[0\]") as caught:
        load_config(write(tmp_path, f"approvers: {approvers}\n"), env={})
    assert caught.value.path.startswith("approvers[1].")


def test_one_slack_id_in_two_workspaces_is_two_people(tmp_path: Path) -> None:
    text = (
        'approvers: [{name: alice, slack: "U1", slack_team: T1},'
        ' {name: bob, slack: "U1", slack_team: T2}]\n'
    )
    directory = load_config(write(tmp_path, text), env={}).directory()
    assert directory.identify("slack", "U1", "T1") == "alice"
    assert directory.identify("slack", "U1", "T2") == "bob"
    assert directory.identify("slack", "U1", "T3") is None


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("sqlite:///tapgate.db", "sqlite:///tapgate.db"),
        ("sqlite:////var/lib/tapgate/t.db", "sqlite:////var/lib/tapgate/t.db"),
        ("postgresql://u:pw@db/t?sslmode=require", "postgresql://u:***@db/t?sslmode=require"),
        ("postgresql://u@db/t?password=pw&x=a%20b", "postgresql://u@db/t?password=***&x=a%20b"),
    ],
)
def test_the_store_url_is_shown_as_written_but_for_its_password(url: str, shown: str) -> None:
    assert display_url(url) == shown
    assert f"url='{shown}'" in repr(StoreConfig(url=url))


@pytest.mark.parametrize(
    ("written", "level"),
    [("", "info"), ("off", "off"), ('"off"', "off"), ("debug", "debug"), ("warning", "warning")],
)
def test_tap_log_takes_a_level_or_off_as_written_in_yaml(
    tmp_path: Path, written: str, level: str
) -> None:
    """A bare ``off`` is YAML 1.1's false: it still means off."""
    text = f"channels:\n  tap_log: {written}\n" if written else "channels: {}\n"
    assert load_config(write(tmp_path, text), env={}).channels.tap_log == level


@pytest.mark.parametrize("written", ["on", "true", "loud", "0"])
def test_any_other_tap_log_names_its_path(tmp_path: Path, written: str) -> None:
    with pytest.raises(ConfigError, match=r"channels\.tap_log"):
        load_config(write(tmp_path, f"channels:\n  tap_log: {written}\n"), env={})
