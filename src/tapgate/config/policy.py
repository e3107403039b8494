"""The ``policy`` section: tools, global and per-agent rules, and their conversion to the core.

:func:`check_policy` makes the checks that need other sections (every
approver or group a rule names exists; per-agent rules name configured
agents); :func:`policy_spec` turns the section into the core's plain
``PolicySpec``, each rule tagged with its YAML path so ``tapgate explain``
can say which rule decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from tapgate.config.agents import AgentConfig
from tapgate.config.approvers import ApproverConfig
from tapgate.config.errors import Loc, format_path
from tapgate.config.fields import (
    Duration,
    Glob,
    NonEmptyStr,
    PositiveInt,
    Section,
    parse_duration,
)
from tapgate.config.quorum import DEFAULT_REMIND_EVERY, check_reach
from tapgate.errors import ConfigError, ConfigErrors
from tapgate.gate.models import Action, Risk, Scope, Verdict
from tapgate.policy.rules import (
    ALL_SCOPES,
    DEFAULT_ALWAYS_TTL,
    DEFAULT_RISK_ACTIONS,
    PolicySpec,
    Rule,
    ToolSpec,
)

__all__ = [
    "AgentPolicyConfig",
    "PolicyConfig",
    "RuleConfig",
    "SandboxConfig",
    "ToolConfig",
    "check_policy",
    "policy_spec",
]


def _path_error(message: str) -> PydanticCustomError:
    # Through the context, like every config error: braces in a path are not placeholders.
    return PydanticCustomError("path", "{message}", {"message": message})


def _absolute_path(value: str) -> str:
    if not value.startswith("/"):
        raise _path_error("expected an absolute path")
    if any(part in (".", "..") for part in value.split("/")) or "//" in value.rstrip("/"):
        # The sandbox binds what the operator wrote: no spelling that means another place.
        raise _path_error("expected a normalised path (no '.', '..' or '//')")
    if not value.strip("/"):
        raise _path_error("'/' is the whole filesystem: name the directories instead")
    return value


def _writable_path(value: str) -> str:
    if value == ".":
        return value
    if not value.startswith("/"):
        where = 'an absolute path or "." (the directory tapgate run starts in)'
        raise _path_error(f"expected {where}")
    return _absolute_path(value)


def _interval_or_off(value: Any) -> float:
    if value in (0, "0", "off") and not isinstance(value, bool):
        return 0.0
    try:
        return parse_duration(value)
    except (TypeError, ValueError) as exc:
        raise PydanticCustomError("duration", "{message}", {"message": str(exc)}) from None


RemindEvery = Annotated[float, BeforeValidator(_interval_or_off)]
"""A reminder interval: a duration, or ``0`` / ``off`` for no reminders."""


def _remember(value: tuple[Scope, ...]) -> tuple[Scope, ...]:
    if "once" not in value:
        # A once-approval is what every card offers: without it nobody could approve at all.
        raise PydanticCustomError("remember", "must include once (approving this call only)")
    return value


Remember = Annotated[tuple[Scope, ...], AfterValidator(_remember)]
"""What an approver may remember: ``[once, session]`` forbids "Always allow"."""


def _check_always_uses(uses: int | None, info: ValidationInfo) -> int | None:
    """``always_uses`` beside a ``remember`` without ``always`` would limit nothing: refused.

    A field validator (``remember`` is declared first, so it is in ``info.data``),
    so the error names ``….always_uses`` itself.
    """
    remember = info.data.get("remember")
    if uses is not None and remember is not None and "always" not in remember:
        raise PydanticCustomError(
            "always_uses", "limits Always grants, but remember here does not include always"
        )
    return uses


WritablePath = Annotated[str, AfterValidator(_writable_path)]
HiddenPath = Annotated[str, AfterValidator(_absolute_path)]


class SandboxConfig(Section):
    """What ``tapgate run --sandbox`` lets this tool's commands do beyond reading files.

    Everything is off unless named: no network, nothing writable but a private
    ``/tmp``. The server hands this to the client, so an agent cannot widen it.
    """

    network: bool = False
    writable: tuple[WritablePath, ...] = ()
    hidden: tuple[HiddenPath, ...] = ()


class ToolConfig(Section):
    """What the operator says about one tool or tool glob (see ``core.rules.ToolSpec``)."""

    risk: Risk = "write"
    shell: NonEmptyStr | None = None
    fingerprint: tuple[NonEmptyStr, ...] = ()
    prefix_words: PositiveInt = 2
    paths: tuple[NonEmptyStr, ...] | None = None
    sandbox: SandboxConfig | None = None
    remember: Remember | None = None
    always_ttl: Duration | None = None
    always_uses: PositiveInt | None = None
    arguments: tuple[NonEmptyStr, ...] | None = None
    """Every argument the tool can have: a rule naming another is refused at load."""

    _always_uses_needs_always = field_validator("always_uses")(_check_always_uses)


class RuleConfig(Section):
    """One policy rule: tool glob, argument globs, action, and who to ask."""

    tool: Glob
    action: Action
    args: dict[NonEmptyStr, Glob] = Field(default_factory=dict)
    approvers: tuple[NonEmptyStr, ...] = ()
    timeout: Duration | None = None
    reason: str | None = None
    quorum: PositiveInt = 1
    self_approval: bool | None = None
    remind_every: RemindEvery | None = None
    escalate_after: Duration | None = None
    escalate_to: tuple[NonEmptyStr, ...] = ()
    remember: Remember | None = None
    always_ttl: Duration | None = None
    always_uses: PositiveInt | None = None

    _always_uses_needs_always = field_validator("always_uses")(_check_always_uses)


class AgentPolicyConfig(Section):
    """Rules for one agent, searched before the global rules."""

    rules: tuple[RuleConfig, ...] = ()


class PolicyConfig(Section):
    """The whole policy section: defaults, tools, global and per-agent rules."""

    default_timeout: Duration = 600.0
    on_timeout: Verdict = "deny"
    default_approvers: tuple[NonEmptyStr, ...] = ()
    remind_every: RemindEvery | None = None
    """Seconds between reminders (``null``: 15 minutes, or the old ``server.remind_after``)."""
    escalate_after: Duration | None = None
    escalate_to: tuple[NonEmptyStr, ...] = ()
    self_approval: bool = True
    risk_defaults: dict[Risk, Action] = Field(default_factory=dict)
    tools: dict[Glob, ToolConfig] = Field(default_factory=dict)
    rules: tuple[RuleConfig, ...] = ()
    agents: dict[NonEmptyStr, AgentPolicyConfig] = Field(default_factory=dict)
    remember: Remember = ("once", "session", "always")
    always_ttl: Duration = DEFAULT_ALWAYS_TTL
    always_uses: PositiveInt | None = None
    """Calls one "Always" grant allows (``1``: single-use); ``null``: until it expires."""

    _always_uses_needs_always = field_validator("always_uses")(_check_always_uses)


def _rules(rules: Sequence[RuleConfig], loc: tuple[str, ...]) -> tuple[Rule, ...]:
    return tuple(
        Rule(
            tool=rule.tool,
            action=rule.action,
            args=dict(rule.args),
            approvers=rule.approvers,
            timeout=rule.timeout,
            reason=rule.reason,
            remember=_scopes(rule.remember),
            always_ttl=rule.always_ttl,
            always_uses=rule.always_uses,
            source=format_path((*loc, index)),
            quorum=rule.quorum,
            self_approval=rule.self_approval,
            remind_every=rule.remind_every,
            escalate_after=rule.escalate_after,
            escalate_to=rule.escalate_to,
        )
        for index, rule in enumerate(rules)
    )


def check_policy(
    policy: PolicyConfig, approvers: Sequence[ApproverConfig], agents: Sequence[AgentConfig]
) -> None:
    known = {a.name for a in approvers} | {g for a in approvers for g in a.groups}
    references: list[tuple[Loc, str]] = [
        (("policy", "default_approvers", i), name)
        for i, name in enumerate(policy.default_approvers)
    ]
    references += [
        (("policy", "escalate_to", i), name) for i, name in enumerate(policy.escalate_to)
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
    unknown = [
        ConfigError(format_path(loc), f"unknown approver or group {name!r}")
        for loc, name in references
        if name not in known
    ]
    ConfigErrors.raise_any(unknown)  # all of them: one run shows every misspelt name
    check_reach(policy, approvers, agents)


def _rule_references(rules: Sequence[RuleConfig], loc: tuple[str, ...]) -> list[tuple[Loc, str]]:
    return [
        ((*loc, r, field, a), name)
        for r, rule in enumerate(rules)
        for field in ("approvers", "escalate_to")
        for a, name in enumerate(getattr(rule, field))
    ]


def policy_spec(
    policy: PolicyConfig,
    agent_configs: Sequence[AgentConfig] = (),
    *,
    remind_after: float | None = None,
) -> PolicySpec:
    """The policy as the core's plain records, each rule tagged with its YAML path."""
    tools = tuple(
        ToolSpec(
            name=name,
            risk=tool.risk,
            shell=tool.shell,
            fingerprint=tool.fingerprint,
            prefix_words=tool.prefix_words,
            paths=tool.paths,
            remember=_scopes(tool.remember),
            always_ttl=tool.always_ttl,
            always_uses=tool.always_uses,
            source=format_path(("policy", "tools", name)),
            arguments=tool.arguments,
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
        remind_every=_remind_every(policy, remind_after),
        escalate_after=policy.escalate_after,
        escalate_to=policy.escalate_to,
        self_approval=policy.self_approval,
        owners={agent.name: agent.owner for agent in agent_configs if agent.owner},
        remember=_scopes(policy.remember) or ALL_SCOPES,
        always_ttl=policy.always_ttl,
        always_uses=policy.always_uses,
    )


def _remind_every(policy: PolicyConfig, remind_after: float | None) -> float:
    """``policy.remind_every``, else the older ``server.remind_after``, else 15 minutes."""
    if policy.remind_every is not None:
        return policy.remind_every
    return remind_after if remind_after is not None else DEFAULT_REMIND_EVERY


def _scopes(remember: Sequence[Scope] | None) -> frozenset[Scope] | None:
    return None if remember is None else frozenset(remember)
