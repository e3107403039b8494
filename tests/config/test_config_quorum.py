"""check-config refuses quorum and escalation that cannot work, and carries the new keys."""

from __future__ import annotations

from typing import Any

import pytest

from tapgate.config import parse_config
from tapgate.errors import ConfigError

PEOPLE = [
    {"name": "alice", "groups": ["oncall"]},
    {"name": "bob", "groups": ["oncall"]},
    {"name": "carol"},
]
AGENT = {"name": "ci", "token": "ci-token-0123456789abcdef", "owner": "carol"}


def config_error(policy: dict[str, Any], agents: list[dict[str, Any]] | None = None) -> str:
    raw = {"approvers": PEOPLE, "agents": agents or [AGENT], "policy": policy}
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    return str(caught.value)


def test_a_quorum_larger_than_the_approvers_a_rule_reaches_is_refused() -> None:
    rules = [{"tool": "deploy", "action": "ask", "approvers": ["oncall"], "quorum": 3}]
    message = config_error({"rules": rules})
    assert message.startswith("policy.rules[0].quorum: quorum 3 is more than the 2 approver(s)")


def test_the_owner_does_not_count_towards_a_quorum_without_self_approval() -> None:
    rule = {"tool": "x", "action": "ask", "approvers": ["carol", "alice"], "quorum": 2}
    message = config_error({"rules": [{**rule, "self_approval": False}]})
    assert "quorum 2 is more than the 1 approver(s) this rule can reach (alice)" in message
    escalated = {**rule, "self_approval": False, "escalate_after": 60, "escalate_to": ["bob"]}
    parse_config({"approvers": PEOPLE, "agents": [AGENT], "policy": {"rules": [escalated]}}, env={})


def test_escalation_to_nobody_is_refused() -> None:
    rule = {"tool": "x", "action": "ask", "approvers": ["oncall"], "escalate_after": 60}
    message = config_error({"rules": [{**rule, "escalate_to": ["alice"]}]})
    assert message == (
        "policy.rules[0].escalate_to: escalation to nobody: "
        "it adds no approver the rule does not already ask"
    )
    assert config_error({"escalate_after": 60}).startswith(
        "policy.escalate_to: escalation to nobody"
    )
    message = config_error({"rules": [{"tool": "x", "action": "ask", "escalate_to": ["bob"]}]})
    assert message == "policy.rules[0].escalate_to: needs escalate_after"


def test_an_owner_must_be_an_approver() -> None:
    message = config_error({}, agents=[{**AGENT, "owner": "oncall"}])
    assert message.startswith("agents[0].owner: unknown approver 'oncall'")


def test_the_new_keys_reach_the_policy() -> None:
    policy: dict[str, Any] = {
        "self_approval": False,
        "rules": [{"tool": "x", "action": "ask", "approvers": ["oncall"], "quorum": 2}],
    }
    raw: dict[str, Any] = {
        "approvers": PEOPLE,
        "agents": [AGENT],
        "server": {"remind_after": 300},
        "policy": policy,
    }
    spec = parse_config(raw, env={}).policy_spec()
    assert spec.remind_every == 300  # the older server.remind_after still counts
    assert spec.owners == {"ci": "carol"} and not spec.self_approval
    assert spec.rules[0].quorum == 2
    policy["remind_every"] = "off"
    assert parse_config(raw, env={}).policy_spec().remind_every == 0
    del raw["server"]
    del policy["remind_every"]
    assert parse_config(raw, env={}).policy_spec().remind_every == 900


def test_a_rule_that_names_nobody_reaches_every_approver() -> None:
    rules = [{"tool": "x", "action": "ask", "quorum": 3}, {"tool": "y", "action": "ask"}]
    parse_config({"approvers": PEOPLE, "agents": [AGENT], "policy": {"rules": rules}}, env={})
