"""Who a rule can reach: the checks that make quorum and escalation possible.

``check-config`` (and every load) refuses a configuration that could leave a
request undecidable by design rather than by absence: a quorum larger than
the distinct approvers a rule can reach (counting escalation, and not
counting an agent's owner where self-approval is off), an escalation that
adds nobody, and an ``owner`` that is not an approver.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tapgate.config.agents import AgentConfig
from tapgate.config.approvers import ApproverConfig
from tapgate.config.errors import Loc, format_path
from tapgate.errors import ConfigError

if TYPE_CHECKING:
    from tapgate.config.policy import PolicyConfig, RuleConfig

__all__ = ["DEFAULT_REMIND_EVERY", "check_reach"]

DEFAULT_REMIND_EVERY = 900.0
"""Fifteen minutes between reminders: often enough to be seen, rare enough to be read."""


def _expand(names: Iterable[str], approvers: Sequence[ApproverConfig]) -> set[str]:
    wanted = set(names)
    return {a.name for a in approvers if a.name in wanted or wanted & set(a.groups)}


def check_reach(
    policy: PolicyConfig, approvers: Sequence[ApproverConfig], agents: Sequence[AgentConfig]
) -> None:
    """Raise :class:`~tapgate.errors.ConfigError` for an impossible quorum or escalation."""
    names = {a.name for a in approvers}
    for index, agent in enumerate(agents):
        if agent.owner is not None and agent.owner not in names:
            where = format_path(("agents", index, "owner"))
            raise ConfigError(where, f"unknown approver {agent.owner!r} (owner must be a person)")
    if policy.escalate_after is not None and not _expand(policy.escalate_to, approvers):
        where = format_path(("policy", "escalate_to"))
        raise ConfigError(where, "escalation to nobody: name approvers or groups to add")
    owners = {agent.name: agent.owner for agent in agents if agent.owner is not None}
    scopes: list[tuple[tuple[str | int, ...], Sequence[RuleConfig], set[str]]] = [
        (("policy", "rules"), policy.rules, set(owners.values()))
    ]
    for agent_name, agent_policy in policy.agents.items():
        owner = {owners[agent_name]} if agent_name in owners else set()
        scopes.append((("policy", "agents", agent_name, "rules"), agent_policy.rules, owner))
    for loc, rules, possible_owners in scopes:
        for index, rule in enumerate(rules):
            _check_rule(policy, rule, (*loc, index), approvers, possible_owners)


def _check_rule(
    policy: PolicyConfig,
    rule: RuleConfig,
    loc: Loc,
    approvers: Sequence[ApproverConfig],
    possible_owners: set[str],
) -> None:
    if rule.escalate_to and rule.escalate_after is None:
        raise ConfigError(format_path((*loc, "escalate_to")), "needs escalate_after")
    named = rule.approvers or policy.default_approvers
    # No names at all means every approver (see policy.default_approvers).
    asked = _expand(named, approvers) if named else {a.name for a in approvers}
    escalate_after = rule.escalate_after if rule.escalate_after is not None else None
    escalate_to = rule.escalate_to or policy.escalate_to
    if escalate_after is None and policy.escalate_after is not None:
        escalate_after, escalate_to = policy.escalate_after, policy.escalate_to
    added = _expand(escalate_to, approvers) - asked if escalate_after is not None else set()
    if rule.escalate_after is not None and not added:
        raise ConfigError(
            format_path((*loc, "escalate_to")),
            "escalation to nobody: it adds no approver the rule does not already ask",
        )
    self_approval = policy.self_approval if rule.self_approval is None else rule.self_approval
    reachable = asked | added
    if not self_approval and reachable & possible_owners:
        reachable -= {sorted(reachable & possible_owners)[0]}  # at most one owner per call
    # A quorum of 1 with no approvers configured at all is a first run, not a contradiction.
    possible = rule.quorum > 1 or bool(asked | added)
    if rule.action == "ask" and rule.quorum > len(reachable) and possible:
        can = ", ".join(sorted(reachable)) or "nobody"
        raise ConfigError(
            format_path((*loc, "quorum")),
            f"quorum {rule.quorum} is more than the {len(reachable)} approver(s) "
            f"this rule can reach ({can})",
        )
