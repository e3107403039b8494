"""The terms of an "ask" beyond who and how long: quorum, owner, reminders, escalation.

A rule may set each of them and the policy's defaults fill the rest; the
request carries the result (see :mod:`tapgate.gate.records`), so every
replica, and every later beat of the heartbeat, reads the same terms from the
store instead of from a config that may have changed since.
"""

from __future__ import annotations

from typing import TypedDict

from tapgate.policy.rules import PolicySpec, Rule

__all__ = ["AskTerms", "ask_terms", "owner_for"]


class AskTerms(TypedDict):
    """The fields of a :class:`~tapgate.policy.engine.PolicyVerdict` this module fills."""

    quorum: int
    owner: str | None
    remind_every: float
    escalate_after: float | None
    escalate_to: tuple[str, ...]


def owner_for(spec: PolicySpec, rule: Rule | None, agent: str) -> str | None:
    """The approver whose approvals of ``agent``'s calls ``rule`` refuses, if any.

    Set only when self-approval is off for this rule (or by default) and the
    agent names an owner.
    """
    owner = spec.owners.get(agent)
    if owner is None:
        return None
    self_approval = spec.self_approval
    if rule is not None and rule.self_approval is not None:
        self_approval = rule.self_approval
    return None if self_approval else owner


def ask_terms(spec: PolicySpec, rule: Rule | None) -> AskTerms:
    """What ``rule`` (or the defaults, for no rule) asks beyond its approvers and owner.

    The same for every agent, so a verdict built from it can be shared; the
    owner, which depends on the agent, is :func:`owner_for`'s.
    """
    remind_every = spec.remind_every
    if rule is not None and rule.remind_every is not None:
        remind_every = rule.remind_every
    escalate_after, escalate_to = spec.escalate_after, spec.escalate_to
    if rule is not None and rule.escalate_after is not None:
        escalate_after, escalate_to = rule.escalate_after, rule.escalate_to or spec.escalate_to
    return AskTerms(
        quorum=rule.quorum if rule is not None else 1,
        owner=None,
        remind_every=remind_every,
        escalate_after=escalate_after,
        escalate_to=escalate_to if escalate_after is not None else (),
    )
