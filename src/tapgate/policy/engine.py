"""The policy engine: allow, ask or deny a tool call (decisions 0001-policy-verdicts,
0002-shell-commands-parsed).

Rules are compiled once, when the policy is loaded, and matched by
:mod:`tapgate.policy.matching`: the rules that can apply to a tool name are
worked out once per name and memoised (bounded, because tool names come from
agents), and their argument globs are checked in one regex pass per argument
rather than one regex per rule.

Precedence: the agent's own rules, then the global rules; the first scope with
a matching rule decides, and within a scope deny > ask > allow. With no match,
the tool's risk level decides. Shell tools are judged command by command (see
:mod:`tapgate.policy.shell`): any denied command denies, allow needs every
command allowed, and hazards (substitutions, redirections to files,
unparsable input) are never auto-allowed. Path arguments are judged as
normalised by :mod:`tapgate.policy.paths`; one that climbs above its root, or
that reads differently once decoded, is likewise never auto-allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from tapgate.gate.models import Action, Risk, Scope, ToolCall, args_digest, canonical_json
from tapgate.policy import shell
from tapgate.policy.matching import Scope as RuleScope
from tapgate.policy.matching import compile_glob, is_glob
from tapgate.policy.paths import DEFAULT_PATH_ARGUMENTS, PathReading, read_paths
from tapgate.policy.rule_checks import normalise_rules
from tapgate.policy.rules import ALL_SCOPES, DEFAULT_ALWAYS_TTL, PolicySpec, Rule, ToolSpec
from tapgate.policy.terms import ask_terms, owner_for

__all__ = ["HAZARD_RULE", "PATH_HAZARD_RULE", "Policy", "PolicyVerdict"]

HAZARD_RULE = "builtin.shell_hazards"
"""The ``rule`` of a verdict capped at "ask" because the shell line has hazards."""

PATH_HAZARD_RULE = "builtin.path_hazards"
"""The ``rule`` of a verdict capped at "ask" because a path argument has hazards."""

_RISK_DEFAULT = "policy.risk_defaults."
_DEFAULT_PATHS = frozenset(DEFAULT_PATH_ARGUMENTS)
_NO_PATHS: Mapping[str, PathReading] = MappingProxyType({})

_RANK: Mapping[Action, int] = {"allow": 0, "ask": 1, "deny": 2}
_CACHE_SIZE = 4096


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicyVerdict:
    """The policy's answer for one call, with everything a request needs.

    ``rule`` names what decided: a rule's YAML path, ``policy.risk_defaults.<risk>``
    :data:`HAZARD_RULE` or :data:`PATH_HAZARD_RULE`. ``grantable`` is false when
    a remembered grant must not turn this "ask" into "allow" (shell and path
    hazards are never auto-allowed). ``remember`` is what an approver may
    choose to remember (the rule's, else the tool's, else the policy's
    setting), ``always_ttl`` how long an "always" grant lasts and
    ``always_uses`` how many calls it allows (``None``: any); a verdict
    that is not ``grantable`` remembers nothing whatever ``remember`` says.
    """

    action: Action
    rule: str
    reason: str
    risk: Risk
    approvers: tuple[str, ...]
    timeout: float
    grantable: bool = True
    quorum: int = 1
    owner: str | None = None
    """The agent's owner when the rule forbids self-approval: their approvals are refused."""
    remind_every: float = 0.0
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()
    remember: frozenset[Scope] = ALL_SCOPES
    always_ttl: float = DEFAULT_ALWAYS_TTL
    always_uses: int | None = None


class Policy:
    """A compiled :class:`~tapgate.policy.rules.PolicySpec`; :meth:`evaluate` is the hot path."""

    def __init__(self, spec: PolicySpec) -> None:
        spec = normalise_rules(spec)  # path globs as path arguments are read: ./a/* is a/*
        self.spec = spec
        self._global = RuleScope(spec.rules)
        self._agents = {name: RuleScope(rules) for name, rules in spec.agents.items()}
        self._tools_exact = {t.name: t for t in spec.tools if not is_glob(t.name)}
        self._tools_glob = [
            (t, compile_glob(t.name, t.source or t.name)) for t in spec.tools if is_glob(t.name)
        ]
        self.tool_spec = lru_cache(maxsize=_CACHE_SIZE)(self._tool_spec)
        # Keyed by id(): rules are unhashable (their args are a dict) and live
        # as long as self.spec; bounded by the rules times the three risks.
        self._rule_verdicts: dict[tuple[int, Risk, int], PolicyVerdict] = {}
        self._default_verdict = lru_cache(maxsize=_CACHE_SIZE)(self._build_verdict)

    def _tool_spec(self, tool: str) -> ToolSpec | None:
        """The operator's spec for ``tool``: an exact name first, then globs in YAML order."""
        spec = self._tools_exact.get(tool)
        if spec is not None:
            return spec
        return next((t for t, match in self._tools_glob if match(tool)), None)

    def evaluate(self, call: ToolCall) -> PolicyVerdict:
        """Allow, ask or deny ``call``, naming the rule that decided."""
        spec = self.tool_spec(call.tool)
        risk: Risk = spec.risk if spec is not None else (call.risk or "write")
        declared = spec.paths if spec is not None else None
        if declared is not None or not _DEFAULT_PATHS.isdisjoint(call.arguments):
            # Calls without a path argument skip all of this: one C-level set check.
            readings = self._read_paths(call, spec)
            if not all(r.unchanged for r in readings.values()):
                return self._evaluate_paths(call, spec, risk, readings)
        # _evaluate_args on the raw arguments, inlined: this is the hot path.
        if spec is not None and spec.shell is not None:
            command = call.arguments.get(spec.shell)
            if isinstance(command, str):
                return self._evaluate_shell(call, spec, risk, command, call.arguments)
        return self._verdict(call, risk, self._decide(call.agent, call.tool, call.arguments))

    def path_readings(self, call: ToolCall) -> Mapping[str, PathReading]:
        """``call``'s path arguments as the policy reads them (``tapgate explain`` shows them)."""
        return self._read_paths(call, self.tool_spec(call.tool))

    def _read_paths(self, call: ToolCall, spec: ToolSpec | None) -> Mapping[str, PathReading]:
        if spec is None or spec.paths is None:
            if _DEFAULT_PATHS.isdisjoint(call.arguments):
                return _NO_PATHS  # most calls: one C-level check, no allocation
            return read_paths(call.arguments, DEFAULT_PATH_ARGUMENTS)
        return read_paths(call.arguments, spec.paths)

    def _evaluate_args(
        self, call: ToolCall, spec: ToolSpec | None, risk: Risk, args: Mapping[str, Any]
    ) -> PolicyVerdict:
        if spec is not None and spec.shell is not None:
            command = args.get(spec.shell)
            if isinstance(command, str):
                return self._evaluate_shell(call, spec, risk, command, args)
        return self._verdict(call, risk, self._decide(call.agent, call.tool, args))

    def _evaluate_paths(
        self,
        call: ToolCall,
        spec: ToolSpec | None,
        risk: Risk,
        readings: Mapping[str, PathReading],
    ) -> PolicyVerdict:
        """Judge the normalised paths; a rule matching another reading may only restrict.

        Allow rules see the normalised value alone. A deny or ask rule that
        matches the path as written (a relative glob such as ``secrets/*``,
        once a ``cwd`` makes the value absolute) or read literally still applies,
        so normalising never weakens a rule the operator already wrote.
        """
        normal = {**call.arguments, **{n: r.value for n, r in readings.items()}}
        verdict = self._evaluate_args(call, spec, risk, normal)
        for other in _other_readings(normal, readings):
            alt = self._evaluate_args(call, spec, risk, other)
            if _RANK[alt.action] > _RANK[verdict.action] and not alt.rule.startswith(_RISK_DEFAULT):
                verdict = alt
        changed = [f"{n}: {r.value}" for n, r in readings.items() if r.value != r.written]
        if changed:
            verdict = replace(verdict, reason=f"{verdict.reason} [{'; '.join(changed)}]")
        hazards = [f"{n} {h}" for n, r in readings.items() for h in r.hazards]
        if not hazards:
            return verdict
        note = "never auto-allowed: " + ", ".join(hazards)
        if verdict.action == "allow":
            return replace(
                verdict, action="ask", rule=PATH_HAZARD_RULE, reason=note, grantable=False
            )
        return replace(verdict, reason=f"{verdict.reason} ({note})", grantable=False)

    def _decide(self, agent: str, tool: str, args: Mapping[str, Any]) -> Rule | None:
        scope = self._agents.get(agent)
        if scope is not None:
            rule = scope.decide(tool, args)
            if rule is not None:
                return rule
        return self._global.decide(tool, args)

    def _verdict(
        self, call: ToolCall, risk: Risk, rule: Rule | None, note: str = ""
    ) -> PolicyVerdict:
        """The verdict ``rule`` (or the risk default) gives, shared unless ``note`` varies it.

        Verdicts are frozen, so one per rule and risk (per tool and risk for a
        default) serves every call that ends there: building the record costs
        more than the decision that picks it.
        """
        if note:
            verdict = self._build_verdict(call.tool, risk, rule, note)
        elif rule is None:
            verdict = self._default_verdict(call.tool, risk, None)
        else:
            # A tool's own remember / always_ttl vary it: keyed by its spec, a bounded set
            # (never by the tool name, which an agent could vary without end).
            key = (id(rule), risk, id(self.tool_spec(call.tool)))
            shared = self._rule_verdicts.get(key)
            if shared is None:
                shared = self._rule_verdicts[key] = self._build_verdict(call.tool, risk, rule)
            verdict = shared
        if self.spec.owners and verdict.action == "ask":  # the owner varies by agent: not cached
            owner = owner_for(self.spec, rule, call.agent)
            if owner is not None:
                return replace(verdict, owner=owner)
        return verdict

    def _build_verdict(
        self, tool: str, risk: Risk, rule: Rule | None, note: str = ""
    ) -> PolicyVerdict:
        remember, ttl, uses = self._remembering(tool, rule)
        if rule is None:
            action = self.spec.risk_actions[risk]
            return PolicyVerdict(
                action=action,
                rule=f"policy.risk_defaults.{risk}",
                reason=f"no rule matched {tool!r}; {risk} tools default to {action}{note}",
                risk=risk,
                approvers=self.spec.default_approvers,
                timeout=self.spec.default_timeout,
                remember=remember,
                always_ttl=ttl,
                always_uses=uses,
                **ask_terms(self.spec, None),
            )
        reason = rule.reason or f"{rule.action} by {rule.source} (tool {rule.tool!r})"
        return PolicyVerdict(
            action=rule.action,
            rule=rule.source,
            reason=reason + note,
            risk=risk,
            approvers=rule.approvers or self.spec.default_approvers,
            timeout=rule.timeout if rule.timeout is not None else self.spec.default_timeout,
            remember=remember,
            always_ttl=ttl,
            always_uses=uses,
            **ask_terms(self.spec, rule),
        )

    def _remembering(
        self, tool: str, rule: Rule | None
    ) -> tuple[frozenset[Scope], float, int | None]:
        """What may be remembered, how long and how often: the rule's word, the tool's, ours."""
        spec = self.tool_spec(tool)
        remember, ttl, uses = self.spec.remember, self.spec.always_ttl, self.spec.always_uses
        for layer in (spec, rule):
            if layer is not None and layer.remember is not None:
                remember = layer.remember
            if layer is not None and layer.always_ttl is not None:
                ttl = layer.always_ttl
            if layer is not None and layer.always_uses is not None:
                uses = layer.always_uses
        return remember, ttl, uses

    def _evaluate_shell(
        self, call: ToolCall, spec: ToolSpec, risk: Risk, command: str, arguments: Mapping[str, Any]
    ) -> PolicyVerdict:
        """Judge each simple command; the most restrictive part decides, hazards cap at ask.

        Only the rules are looked up per command; the one verdict is built for
        the first most restrictive part, which is the part the verdict names.
        """
        assert spec.shell is not None
        texts, hazards = _shell_texts(command)
        default = _RANK[self.spec.risk_actions[risk]]
        worst: tuple[int, Rule | None, str] = (-1, None, "")
        for text in texts:
            rule = self._decide(call.agent, call.tool, {**arguments, spec.shell: text})
            rank = default if rule is None else _RANK[rule.action]
            if rank > worst[0]:
                worst = (rank, rule, text)
        _, rule, text = worst
        note = f" [command: {text}]" if len(texts) > 1 or text != command.strip() else ""
        verdict = self._verdict(call, risk, rule, note)
        if not hazards:
            return verdict
        if verdict.action == "allow":
            reason = "never auto-allowed: " + ", ".join(hazards)
            return replace(verdict, action="ask", rule=HAZARD_RULE, reason=reason, grantable=False)
        return replace(verdict, grantable=False)

    def fingerprint(self, call: ToolCall, spec: ToolSpec | None = None) -> str:
        """The grant key for ``call``'s arguments, as the tool's config chooses.

        Named arguments when the spec lists them; a shell command's first
        ``prefix_words`` words per simple command; otherwise all arguments.
        Path arguments count as normalised, so a grant for ``notes.txt`` in
        one ``cwd`` does not cover ``notes.txt`` in another.
        """
        spec = spec if spec is not None else self.tool_spec(call.tool)
        readings = self._read_paths(call, spec)
        args = {**call.arguments, **{n: r.value for n, r in readings.items()}}
        if spec is not None and spec.fingerprint:
            return canonical_json({k: args.get(k) for k in spec.fingerprint})
        if spec is not None and spec.shell is not None:
            command = args.get(spec.shell)
            if isinstance(command, str):
                prefixes = dict.fromkeys(
                    " ".join(c.words[: spec.prefix_words]) for c in _parse(command).commands
                )
                return "shell:" + "\n".join(prefixes)
        return "args:" + args_digest(args)


def _spellings(command: shell.SimpleCommand) -> tuple[str, ...]:
    """The texts a command is judged as: ``/bin/rm -rf /`` is also ``rm -rf /``.

    A rule written for ``rm *`` must not be dodged by spelling out the path;
    judging both and keeping the most restrictive verdict closes that gap.
    """
    name = command.words[0] if command.words else ""
    if "/" not in name or name.endswith("/"):
        return (command.text,)
    base = " ".join((name.rsplit("/", 1)[1], *command.words[1:]))
    return (command.text, base)


def _other_readings(
    normal: Mapping[str, Any], readings: Mapping[str, PathReading]
) -> list[dict[str, Any]]:
    """The arguments with the path arguments as written, and read literally where that differs."""
    others = []
    written = {n: r.written for n, r in readings.items() if r.written != r.value}
    if written:
        others.append({**normal, **written})
    literal = {n: r.literal for n, r in readings.items() if r.literal is not None}
    if literal:
        others.append({**normal, **literal})
    return others


@lru_cache(maxsize=_CACHE_SIZE)
def _parse(command: str) -> shell.ShellParse:
    """Agents repeat their commands; parsing each distinct line once is enough."""
    return shell.parse(command)


@lru_cache(maxsize=_CACHE_SIZE)
def _shell_texts(command: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The texts a line's rules are matched against, and its hazards, once per line."""
    parsed = _parse(command)
    texts = tuple(t for c in parsed.commands for t in _spellings(c)) or (command.strip(),)
    return texts, parsed.hazards
