"""Every approver the policy asks can be reached on an enabled channel.

A request whose approvers have no address on any enabled channel is sent to
nobody and times out in silence, ten minutes later, as a denial nobody saw
coming. That is a config mistake, so it is refused at load, naming both ends:
the approver (``approvers[1]``) and what asks them (``policy.rules[0]``,
through a group or directly, or ``policy.default_approvers``).

The console reaches everyone (it prints on the server), so with the console
enabled nobody is unreachable. ``default_approvers: []`` means "every
approver": there a request waits for nobody only when no approver at all can
be reached, and that alone is refused, so that an approver kept for
``tapgate resolve --as`` (break-glass at the server) need not have a chat id.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tapgate.channels import registry
from tapgate.config.approvers import ApproverConfig
from tapgate.config.errors import Loc, format_path
from tapgate.config.policy import PolicyConfig, RuleConfig
from tapgate.errors import ConfigError

__all__ = ["check_reachable", "reachable_on"]


def reachable_on(approver: ApproverConfig, channels: Sequence[str]) -> tuple[str, ...]:
    """The enabled channels that reach ``approver``, in delivery order."""
    addresses = approver.addresses()
    return tuple(
        name
        for name in channels
        if name in addresses
        or ((channel := registry.get(name)) is not None and channel.address is None)
    )


def check_reachable(
    policy: PolicyConfig, approvers: Sequence[ApproverConfig], channels: Sequence[str]
) -> None:
    """Refuse a config where the policy asks an approver no enabled channel reaches."""
    unreachable = {
        index: approver
        for index, approver in enumerate(approvers)
        if not reachable_on(approver, channels)
    }
    if not unreachable:
        return
    on = ", ".join(c for c in channels) or "none"
    for loc, name in _references(policy):
        for index, approver in unreachable.items():
            if name == approver.name or name in approver.groups:
                via = "" if name == approver.name else f" (through group {name!r})"
                raise ConfigError(
                    format_path(("approvers", index)),
                    f"{approver.name!r} has no address on any enabled channel ({on}), "
                    f"but {format_path(loc)} asks them{via}: give them a "
                    f"{_ids_for(channels)} or enable the console",
                )
    if not policy.default_approvers and len(unreachable) == len(approvers):
        raise ConfigError(
            "approvers",
            f"no approver has an address on any enabled channel ({on}): every request "
            f"would wait for nobody; give them a {_ids_for(channels)} or enable the console",
        )


def _ids_for(channels: Sequence[str]) -> str:
    ids = [
        f"{name} id"
        for name in channels
        if (channel := registry.get(name)) is not None and channel.address is not None
    ]
    return " or ".join(ids) or "channel"


def _references(policy: PolicyConfig) -> Iterator[tuple[Loc, str]]:
    """Every name the policy asks, with the YAML path of the rule (or list) naming it."""
    for i, name in enumerate(policy.default_approvers):
        yield ("policy", "default_approvers", i), name
    yield from _rule_names(policy.rules, ("policy", "rules"))
    for agent, agent_policy in policy.agents.items():
        yield from _rule_names(agent_policy.rules, ("policy", "agents", agent, "rules"))


def _rule_names(rules: Sequence[RuleConfig], loc: tuple[str, ...]) -> Iterator[tuple[Loc, str]]:
    for r, rule in enumerate(rules):
        for name in rule.approvers:
            yield (*loc, r), name
