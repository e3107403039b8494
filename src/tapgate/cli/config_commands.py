"""``tapgate check-config`` and ``tapgate explain``: the commands that read the config only.

Neither opens the database nor starts a server, so both run anywhere the
config file is: in CI to validate a change, or at a desk to ask why a tool
call would be allowed, asked or denied.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tapgate.cli.banner import warnings
from tapgate.cli.commands import UsageError
from tapgate.cli.text import paint, readable_duration
from tapgate.config import Config, display_url
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy, PolicyVerdict

__all__ = ["check_config", "explain"]


def check_config(args: argparse.Namespace, config: Config) -> int:
    """Validate the config (loading it did) and summarise what it sets up."""
    spec = config.policy_spec()
    rules = len(spec.rules) + sum(len(r) for r in spec.agents.values())
    print(paint("config OK", "green") + f": {args.config or '(built-in defaults)'}")
    print(f"  store: {display_url(config.store_url)}")
    print(
        f"  agents: {len(config.agents)}, approvers: {len(config.approvers)}, "
        f"channels: {', '.join(config.enabled_channels) or 'none'}"
    )
    print(
        f"  tools: {len(spec.tools)}, rules: {rules}, "
        f"default timeout: {readable_duration(spec.default_timeout)}, "
        f"on_timeout: {spec.on_timeout}"
    )
    for text in warnings(config):
        print(paint(f"  warning: {text}", "yellow"))
    return 0


def _agent(args: argparse.Namespace, config: Config) -> str:
    """The ``--agent`` to evaluate as; one the config does not list is a typo, refused.

    Without ``--agent`` the call is evaluated as no configured agent, so only
    the global rules apply, as they would to any agent without rules of its own.
    """
    names = [agent.name for agent in config.agents]
    if args.agent is None:
        unlisted = "(no agent)"
        while unlisted in names:  # a config could name an agent so; stay outside the list
            unlisted += "'"
        return unlisted
    if args.agent not in names:
        known = ", ".join(names) or "none configured"
        raise UsageError(f"--agent: unknown agent {args.agent!r} (the config's agents: {known})")
    return str(args.agent)


def _always_terms(out: dict[str, Any]) -> str:
    """ "(Always: 30 days)", "(Always: once, within 2 days)": what an Always grant would be."""
    always = out.get("always")
    if always is None:
        return ""
    uses = always["uses"]
    count = "" if uses is None else ("once, within " if uses == 1 else f"{uses} times, within ")
    return f" (Always: {count}{readable_duration(always['ttl'])})"


def explain(args: argparse.Namespace, config: Config) -> int:
    """Show the verdict the policy gives a tool call, the rule that decided, and why."""
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise UsageError('--args must be a JSON object, e.g. \'{"command": "ls"}\'')
    policy = Policy(config.policy_spec())
    call = ToolCall(tool=args.tool, arguments=arguments, agent=_agent(args, config), risk=args.risk)
    verdict = policy.evaluate(call)
    readings = policy.path_readings(call)
    out: dict[str, Any] = {
        "decision": verdict.action,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "risk": verdict.risk,
    }
    if readings:
        out["paths"] = {name: r.value for name, r in readings.items()}
    if verdict.action == "ask":
        out["approvers"] = list(config.directory().expand(verdict.approvers))
        out["timeout"] = verdict.timeout
        out["grantable"] = verdict.grantable
        out["remember"] = sorted(verdict.remember) if verdict.grantable else ["once"]
        if "always" in out["remember"]:
            out["always"] = {"ttl": verdict.always_ttl, "uses": verdict.always_uses}
        out |= _ask_terms(verdict, config)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{verdict.action.upper()}  ({verdict.rule})")
        print(f"  {verdict.reason}")
        for name, reading in readings.items():
            written = "" if reading.value == reading.written else f"  (written {reading.written!r})"
            print(f"  {name}: {reading.value}{written}")
        if verdict.action == "ask":
            print(
                f"  approvers: {', '.join(out['approvers']) or '(none)'}; "
                f"timeout {readable_duration(verdict.timeout)}"
            )
            print(f"  may remember: {', '.join(out['remember'])}{_always_terms(out)}")
            for line in _ask_terms_text(out):
                print(f"  {line}")
    return 0


def _ask_terms(verdict: PolicyVerdict, config: Config) -> dict[str, Any]:
    """Quorum, the owner whose approvals are refused, reminders and escalation of an ask."""
    terms: dict[str, Any] = {"quorum": verdict.quorum, "remind_every": verdict.remind_every}
    if verdict.owner is not None:
        terms["self_approval_refused"] = verdict.owner
    if verdict.escalate_after is not None:
        added = config.directory().expand(verdict.escalate_to) if verdict.escalate_to else ()
        terms["escalate"] = {"after": verdict.escalate_after, "to": list(added)}
    return terms


def _ask_terms_text(out: dict[str, Any]) -> list[str]:
    """``quorum: 2 approvals``, ``reminders: every 15m``, ``escalation: after 5m to bob``."""
    lines = []
    if out["quorum"] > 1:
        lines.append(f"quorum: {out['quorum']} approvals (one deny denies)")
    if "self_approval_refused" in out:
        lines.append(
            f"self-approval: {out['self_approval_refused']} (the agent's owner) may not approve"
        )
    every = out["remind_every"]
    lines.append(f"reminders: every {readable_duration(every)}" if every else "reminders: off")
    escalate = out.get("escalate")
    if escalate is not None:
        to = ", ".join(escalate["to"]) or "(nobody)"
        lines.append(f"escalation: after {readable_duration(escalate['after'])} to {to}")
    return lines
