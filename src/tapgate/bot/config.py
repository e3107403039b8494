"""Loading tapgate's YAML config: interpolation, validation, and conversion to the core.

This module owns the path from a file on disk to the core's domain objects::

    YAML text ──safe load──► plain data ──${VAR}──► plain data ──pydantic──► Config
        Config.policy_spec() ──► core.rules.PolicySpec
        Config.directory()   ──► core.directory.Directory

Every mistake an operator can make surfaces as one :class:`~tapgate.errors.ConfigError`
whose ``path`` is the YAML path of the offending value (``policy.rules[3].tool``),
never as a pydantic traceback. A key whose value is ``null`` means "use the
default", so that a section whose entries are all commented out still loads.
The section models live in :mod:`tapgate.bot._config_models`.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Self

import yaml
from pydantic import Field, ValidationError, model_validator

from tapgate.bot._config_models import (
    AgentConfig,
    AgentPolicyConfig,
    ApproverConfig,
    ChannelsConfig,
    ConsoleConfig,
    LineConfig,
    Loc,
    PolicyConfig,
    RuleConfig,
    Section,
    ServerConfig,
    SlackConfig,
    StoreConfig,
    ToolConfig,
    config_error,
    format_path,
    parse_duration,
)
from tapgate.core.directory import Approver, Directory
from tapgate.core.rules import DEFAULT_RISK_ACTIONS, PolicySpec, Rule, ToolSpec
from tapgate.errors import ConfigError

__all__ = [
    "AgentConfig",
    "AgentPolicyConfig",
    "ApproverConfig",
    "ChannelsConfig",
    "Config",
    "ConsoleConfig",
    "LineConfig",
    "PolicyConfig",
    "RuleConfig",
    "ServerConfig",
    "SlackConfig",
    "StoreConfig",
    "ToolConfig",
    "load_config",
    "parse_config",
    "parse_duration",
]

# `$${` first so that the escape wins over a reference starting at its second `$`;
# a bare `${` with no closing brace is caught by the last alternative.
_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_VARIABLE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


class Config(Section):
    """The whole validated config file; the one object the app is assembled from.

    Build it with :func:`load_config` or :func:`parse_config`, which interpolate
    ``${VAR}`` first and turn errors into ``ConfigError``. Constructing it
    directly skips interpolation but still runs every check.
    """

    server: ServerConfig = Field(default_factory=ServerConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agents: tuple[AgentConfig, ...] = ()
    approvers: tuple[ApproverConfig, ...] = ()
    channels: ChannelsConfig = Field(default_factory=ChannelsConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)

    @model_validator(mode="after")
    def _cross_check(self) -> Self:
        # Raises ConfigError, which pydantic lets through unchanged: these checks
        # know the exact YAML path, which a pydantic error at the model would lose.
        _check_agents(self.agents)
        _check_approvers(self.approvers)
        _check_policy(self.policy, self.approvers, self.agents)
        return self

    @property
    def store_url(self) -> str:
        """The database URL for the store."""
        return self.store.url

    @property
    def enabled_channels(self) -> tuple[str, ...]:
        """Notification channels in delivery order.

        The console is on by default only when no chat platform is configured,
        so a first run shows requests somewhere, while a production setup does
        not print them unless the operator asks for it.
        """
        channels = self.channels
        console = channels.console
        if console is None:
            console_on = channels.line is None and channels.slack is None
        else:
            console_on = console.enabled
        out = ["console"] if console_on else []
        out += ["line"] if channels.line is not None else []
        out += ["slack"] if channels.slack is not None else []
        return tuple(out)

    def policy_spec(self) -> PolicySpec:
        """The policy as the core's plain records, each rule tagged with its YAML path."""
        policy = self.policy
        tools = tuple(
            ToolSpec(
                name=name,
                risk=tool.risk,
                shell=tool.shell,
                fingerprint=tool.fingerprint,
                prefix_words=tool.prefix_words,
                source=format_path(("policy", "tools", name)),
            )
            for name, tool in policy.tools.items()
        )
        agents = {
            name: _rules(agent.rules, ("policy", "agents", name, "rules"))
            for name, agent in policy.agents.items()
        }
        return PolicySpec(
            tools=tools,
            rules=_rules(policy.rules, ("policy", "rules")),
            agents=agents,
            risk_actions={**DEFAULT_RISK_ACTIONS, **policy.risk_defaults},
            default_timeout=policy.default_timeout,
            on_timeout=policy.on_timeout,
            default_approvers=policy.default_approvers,
        )

    def directory(self) -> Directory:
        """The approvers and the enabled channels, as the core looks them up."""
        approvers = []
        for approver in self.approvers:
            addresses = [("line", approver.line), ("slack", approver.slack)]
            approvers.append(
                Approver(
                    name=approver.name,
                    addresses=tuple((ch, uid) for ch, uid in addresses if uid is not None),
                    groups=approver.groups,
                    teams=(("slack", approver.slack_team),) if approver.slack_team else (),
                )
            )
        return Directory(approvers, self.enabled_channels)

    def agent_for_token(self, token: str) -> str | None:
        """The agent whose bearer token is ``token``, or ``None``.

        Every configured token is compared, in constant time and without an
        early exit, so response timing says nothing about which prefix or which
        agent came close.
        """
        candidate = token.encode()
        found: str | None = None
        for agent in self.agents:
            matches = hmac.compare_digest(candidate, agent.token.get_secret_value().encode())
            if matches and found is None:
                found = agent.name
        return found


def _rules(rules: Sequence[RuleConfig], loc: tuple[str, ...]) -> tuple[Rule, ...]:
    return tuple(
        Rule(
            tool=rule.tool,
            action=rule.action,
            args=dict(rule.args),
            approvers=rule.approvers,
            timeout=rule.timeout,
            reason=rule.reason,
            source=format_path((*loc, index)),
        )
        for index, rule in enumerate(rules)
    )


def _check_agents(agents: Sequence[AgentConfig]) -> None:
    names: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for index, agent in enumerate(agents):
        if agent.name in names:
            raise ConfigError(
                format_path(("agents", index, "name")),
                f"duplicate agent name {agent.name!r} (also agents[{names[agent.name]}])",
            )
        token = agent.token.get_secret_value()
        if token in tokens:
            raise ConfigError(
                format_path(("agents", index, "token")),
                f"duplicate token (agents[{tokens[token]}] uses the same one)",
            )
        names[agent.name] = index
        tokens[token] = index


def _check_approvers(approvers: Sequence[ApproverConfig]) -> None:
    groups = {group for approver in approvers for group in approver.groups}
    # Keyed case-insensitively: "Alice" and "alice" as two approvers is a typo
    # waiting to become an audit log nobody can read (decisions match exactly).
    seen: dict[str, int] = {}
    for index, approver in enumerate(approvers):
        path = format_path(("approvers", index, "name"))
        key = approver.name.casefold()
        if key in seen:
            raise ConfigError(
                path,
                f"duplicate approver name {approver.name!r} "
                f"(also approvers[{seen[key]}], names are compared ignoring case)",
            )
        if approver.name in groups:
            raise ConfigError(path, f"{approver.name!r} is also a group name")
        seen[key] = index
    _check_platform_ids(approvers)


def _check_platform_ids(approvers: Sequence[ApproverConfig]) -> None:
    """One person per platform id: a tap must name exactly one approver.

    Slack ids are unique only within a workspace, so one may repeat for
    approvers in different ``slack_team``s; LINE ids never repeat.
    """
    owners: dict[tuple[str, str], list[tuple[int, str | None]]] = {}
    for index, approver in enumerate(approvers):
        for channel, uid, team in (
            ("line", approver.line, None),
            ("slack", approver.slack, approver.slack_team),
        ):
            if uid is None:
                continue
            for other, other_team in owners.get((channel, uid), []):
                if team is None or other_team is None or team == other_team:
                    raise ConfigError(
                        format_path(("approvers", index, channel)),
                        f"the same {channel} user id as approvers[{other}]: a tap could not "
                        "tell them apart"
                        + (" (set a different slack_team on each)" if channel == "slack" else ""),
                    )
            owners.setdefault((channel, uid), []).append((index, team))


def _check_policy(
    policy: PolicyConfig, approvers: Sequence[ApproverConfig], agents: Sequence[AgentConfig]
) -> None:
    known = {a.name for a in approvers} | {g for a in approvers for g in a.groups}
    references: list[tuple[Loc, str]] = [
        (("policy", "default_approvers", i), name)
        for i, name in enumerate(policy.default_approvers)
    ]
    references += _rule_references(policy.rules, ("policy", "rules"))
    agent_names = {agent.name for agent in agents}
    for agent, agent_policy in policy.agents.items():
        if agent not in agent_names:
            raise ConfigError(
                format_path(("policy", "agents", agent)),
                f"unknown agent {agent!r} (not listed under agents)",
            )
        references += _rule_references(agent_policy.rules, ("policy", "agents", agent, "rules"))
    for loc, name in references:
        if name not in known:
            raise ConfigError(format_path(loc), f"unknown approver or group {name!r}")


def _rule_references(rules: Sequence[RuleConfig], loc: tuple[str, ...]) -> list[tuple[Loc, str]]:
    return [
        ((*loc, r, "approvers", a), name)
        for r, rule in enumerate(rules)
        for a, name in enumerate(rule.approvers)
    ]


def load_config(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Config:
    """Read, interpolate and validate the YAML config file at ``path``.

    ``env`` supplies ``${VAR}`` values (default: ``os.environ``) so tests and
    tools can load a config without touching the process environment.
    """
    file = os.fspath(path)
    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError("", f"cannot read config file {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("", f"config file {file} is not UTF-8 text: {exc.reason}") from None
    # from None: a YAML error's text quotes the offending line, which may hold a secret.
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:  # a recursive alias, or nesting hundreds deep
        raise ConfigError("", f"{file}: invalid YAML: nested too deeply") from None
    except yaml.MarkedYAMLError as exc:
        raise ConfigError("", _yaml_message(file, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError("", f"{file}: invalid YAML: {exc}") from None
    return parse_config(data, env)


def parse_config(data: object, env: Mapping[str, str] | None = None) -> Config:
    """Interpolate ``${VAR}`` in already-loaded data, then validate it into a :class:`Config`.

    An empty document (``None``) is the all-defaults config.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    try:
        resolved = _interpolate({} if data is None else data, environ, (), [_MAX_VALUES])
        return Config.model_validate(resolved)
    except ValidationError as exc:
        # from None: the pydantic error would repeat every input value, secrets included.
        raise config_error(exc, Config) from None
    except RecursionError:  # data built in Python can nest deeper than any config needs
        raise ConfigError("", "the configuration is nested too deeply") from None


_MAX_VALUES = 100_000
"""Values a configuration may hold once YAML aliases are expanded (a real one has hundreds)."""


class _StrictLoader(yaml.SafeLoader):
    """``safe_load`` that also refuses duplicate keys.

    Plain YAML keeps the last of two equal keys, so a second ``rules:`` under
    ``policy`` would silently discard the first list of rules.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # ``<<: *base``: merged keys may be overridden, explicit ones not
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool):
                continue  # a complex key (``? [a, b]``): the models refuse it with its path
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_message(file: str, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = exc.problem or exc.context or "syntax error"
    return f"{file}: invalid YAML{where}: {problem}"


def _interpolate(
    value: object, env: Mapping[str, str], loc: tuple[str | int, ...], budget: list[int]
) -> object:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string value; ``$${`` is a literal ``${``.

    One pass only: text that comes out of the environment is never expanded
    again, so a secret that happens to contain ``${`` stays as it is.
    ``budget`` counts values down: YAML aliases are shared by the loader but
    copied here, and a few hundred bytes of nested aliases ("billion laughs")
    would otherwise expand to billions of values and exhaust memory.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError(format_path(loc), f"more than {_MAX_VALUES:,} values (nested aliases?)")
    if isinstance(value, str):
        return _substitute(value, env, loc)
    if isinstance(value, Mapping):
        return {
            key: _interpolate(item, env, (*loc, str(key)), budget) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_interpolate(item, env, (*loc, index), budget) for index, item in enumerate(value)]
    return value


def _substitute(text: str, env: Mapping[str, str], loc: Loc) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group("body")
        if body is None:
            raise ConfigError(format_path(loc), "unterminated ${ (write $${ for a literal ${)")
        variable = _VARIABLE.fullmatch(body)
        if variable is None:
            raise ConfigError(format_path(loc), f"invalid environment reference ${{{body}}}")
        name, default = variable.group("name"), variable.group("default")
        if default is not None and "${" in default:
            raise ConfigError(format_path(loc), "nested ${...} references are not supported")
        found = env.get(name)
        if default is not None and not found:  # like the shell: unset or empty
            return default
        if found is None:
            raise ConfigError(format_path(loc), f"environment variable {name} is not set")
        return found

    return _REFERENCE.sub(replace, text)
