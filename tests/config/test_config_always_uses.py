"""``always_uses``: single-use (or N-use) Always grants, validated with the YAML path named."""

from __future__ import annotations

from typing import Any

import pytest

from tapgate.config import parse_config
from tapgate.errors import ConfigError
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy

PEOPLE = [{"name": "alice"}]


def config_error(policy: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config({"approvers": PEOPLE, "policy": policy}, env={})
    return str(caught.value)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"always_uses": 0}, "policy.always_uses: must be at least 1"),
        ({"always_uses": "once"}, "policy.always_uses: expected an integer"),
        ({"tools": {"deploy": {"always_uses": -2}}}, "policy.tools.deploy.always_uses: must be"),
        (
            {"rules": [{"tool": "x", "action": "ask", "always_uses": 1.5}]},
            "policy.rules[0].always_uses: expected an integer",
        ),
        (
            {"agents": {"ci": {"rules": [{"tool": "x", "action": "ask", "always_uses": 0}]}}},
            "policy.agents.ci.rules[0].always_uses: must be at least 1",
        ),
    ],
)
def test_always_uses_must_be_a_positive_integer(policy: dict[str, Any], expected: str) -> None:
    assert config_error(policy).startswith(expected)


def test_always_uses_beside_a_remember_without_always_is_refused() -> None:
    rule = {"tool": "x", "action": "ask", "remember": ["once", "session"], "always_uses": 1}
    assert config_error({"rules": [rule]}) == (
        "policy.rules[0].always_uses: limits Always grants, "
        "but remember here does not include always"
    )
    tool = {"remember": ["once"], "always_uses": 2}
    assert config_error({"tools": {"x": tool}}).startswith("policy.tools.x.always_uses: limits")


def test_a_rule_beats_the_tool_which_beats_the_policy() -> None:
    config = parse_config(
        {
            "approvers": PEOPLE,
            "policy": {
                "always_uses": 5,
                "tools": {"deploy": {"always_uses": 1}},
                "rules": [
                    {"tool": "deploy", "action": "ask", "args": {"env": "prod"}, "always_uses": 2},
                    {"tool": "*", "action": "ask"},
                ],
            },
        },
        env={},
    )
    policy = Policy(config.policy_spec())

    def uses(tool: str, **arguments: Any) -> int | None:
        return policy.evaluate(ToolCall(tool=tool, arguments=arguments, agent="ci")).always_uses

    assert uses("deploy", env="prod") == 2
    assert uses("deploy", env="staging") == 1
    assert uses("restart") == 5
    assert Policy(parse_config({}, env={}).policy_spec()).spec.always_uses is None
