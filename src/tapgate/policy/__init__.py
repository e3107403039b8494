"""tapgate.policy: what a tool call is allowed to do, decided from the config's rules.

The rules as data (``rules``), which rule decides (``matching``), the engine
(``engine``), shell commands parsed (``shell``), path arguments normalised
(``paths``), secrets masked and invisible characters revealed (``masking``,
``secret_shapes``) and per-agent ask limits (``limits``). Pure functions over
records: no I/O, no web framework, no chat SDK, no YAML.

The names load on first use (PEP 562): the agent-side hook imports only what
it judges with.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports

if TYPE_CHECKING:
    from tapgate.policy.engine import HAZARD_RULE, PATH_HAZARD_RULE, Policy, PolicyVerdict
    from tapgate.policy.rules import DEFAULT_RISK_ACTIONS, PolicySpec, Rule, ToolSpec

__all__ = [
    "DEFAULT_RISK_ACTIONS",
    "HAZARD_RULE",
    "PATH_HAZARD_RULE",
    "Policy",
    "PolicySpec",
    "PolicyVerdict",
    "Rule",
    "ToolSpec",
]

_LAZY = {
    "DEFAULT_RISK_ACTIONS": "tapgate.policy.rules",
    "HAZARD_RULE": "tapgate.policy.engine",
    "PATH_HAZARD_RULE": "tapgate.policy.engine",
    "Policy": "tapgate.policy.engine",
    "PolicySpec": "tapgate.policy.rules",
    "PolicyVerdict": "tapgate.policy.engine",
    "Rule": "tapgate.policy.rules",
    "ToolSpec": "tapgate.policy.rules",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
