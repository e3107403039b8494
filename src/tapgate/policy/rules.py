"""The policy as data: tool specs, rules and settings, as the config loader builds them.

These records are plain and already validated; :mod:`tapgate.policy.engine`
compiles them into an engine. Each rule keeps ``source``, its place in the YAML
(``policy.rules[3]``, ``policy.agents.deployer.rules[0]``), so every verdict
can say which line of the operator's file produced it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tapgate.gate.models import Action, Risk, Scope, Verdict

__all__ = [
    "ALL_SCOPES",
    "DEFAULT_ALWAYS_TTL",
    "DEFAULT_RISK_ACTIONS",
    "PolicySpec",
    "Rule",
    "ToolSpec",
]

ALL_SCOPES: frozenset[Scope] = frozenset({"once", "session", "always"})
"""Every remember scope: what an approver may choose unless a tool or rule narrows it."""

DEFAULT_ALWAYS_TTL = 30 * 86400.0
"""How long an "Always allow" grant lasts unless configured: long enough to end the
prompts, short enough that a forgotten grant does not stand for ever."""

DEFAULT_RISK_ACTIONS: Mapping[Risk, Action] = {
    "read_only": "allow",
    "write": "ask",
    "destructive": "deny",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """What the operator says about a tool (or a glob of tools).

    ``shell`` names the argument that holds a shell command; such a tool is
    judged command by command. ``fingerprint`` names the arguments whose values
    key a grant; empty means "a shell command's first ``prefix_words`` words"
    for shell tools and "all arguments" otherwise. ``paths`` names the
    arguments that are file paths, normalised before rules and fingerprints
    see them; ``None`` means :data:`~tapgate.policy.paths.DEFAULT_PATH_ARGUMENTS`
    and ``()`` means none. ``remember``, ``always_ttl`` and ``always_uses``
    narrow what an approver may remember for this tool (``None``: the
    policy's default; a matching rule's own setting wins over both).
    """

    name: str
    risk: Risk = "write"
    shell: str | None = None
    fingerprint: tuple[str, ...] = ()
    prefix_words: int = 2
    paths: tuple[str, ...] | None = None
    remember: frozenset[Scope] | None = None
    always_ttl: float | None = None
    always_uses: int | None = None
    source: str = ""
    arguments: tuple[str, ...] | None = None
    """Every argument the tool can have, when the operator says (a rule naming another is
    refused); ``None``: not said (see :mod:`tapgate.policy.rule_checks`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    """One policy rule: a tool glob, optional argument globs, and an action.

    For a shell tool, a glob on its command argument is matched against each
    simple command of the parsed command line, not against the whole string.
    """

    tool: str
    action: Action
    args: Mapping[str, str] = field(default_factory=dict)
    approvers: tuple[str, ...] = ()
    timeout: float | None = None
    reason: str | None = None
    remember: frozenset[Scope] | None = None
    always_ttl: float | None = None
    always_uses: int | None = None
    source: str = ""
    quorum: int = 1
    self_approval: bool | None = None
    """``False``: the agent's owner may not approve its calls; ``None``: the policy default."""
    remind_every: float | None = None
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicySpec:
    """The whole policy: tools, global rules, per-agent rules and defaults."""

    tools: tuple[ToolSpec, ...] = ()
    rules: tuple[Rule, ...] = ()
    agents: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)
    risk_actions: Mapping[Risk, Action] = field(default_factory=lambda: dict(DEFAULT_RISK_ACTIONS))
    default_timeout: float = 600.0
    on_timeout: Verdict = "deny"
    default_approvers: tuple[str, ...] = ()
    remind_every: float = 900.0
    """Seconds between reminders of a pending request (0: none); a rule may override it."""
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()
    self_approval: bool = True
    owners: Mapping[str, str] = field(default_factory=dict)
    """Each agent's owner (an approver), for ``self_approval: false``."""
    remember: frozenset[Scope] = ALL_SCOPES
    always_ttl: float = DEFAULT_ALWAYS_TTL
    always_uses: int | None = None
    """Calls an "Always" grant allows before it is spent (``None``: until it expires)."""
