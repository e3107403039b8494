"""The one-pass matcher against a naive loop over every rule: same verdict, same rule.

:class:`NaivePolicy` is the reference: the whole engine (tool specs, shell
commands, path readings, hazards) with the rule matching replaced by the
obvious loop, fnmatch on every rule in YAML order, the most restrictive kept,
the earlier among equals. Any difference in what the fast matcher picks shows
up as a different verdict or a different ``rule``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.errors import PolicyError
from tapgate.gate.models import Action, Risk, ToolCall, canonical_json
from tapgate.policy.engine import Policy, PolicyVerdict
from tapgate.policy.rule_checks import normalise_glob, path_arguments, tool_for_rule
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec

RANK = {"allow": 0, "ask": 1, "deny": 2}


def naive_decide(rules: Sequence[Rule], tool: str, args: Mapping[str, Any]) -> Rule | None:
    """Every rule, every call: the definition the fast matcher must agree with."""
    best: Rule | None = None
    for rule in rules:
        if not fnmatch.fnmatchcase(tool, rule.tool):
            continue
        if not all(
            name in args and fnmatch.fnmatchcase(_text(args[name]), glob)
            for name, glob in rule.args.items()
        ):
            continue
        if best is None or RANK[rule.action] > RANK[best.action]:
            best = rule
    return best


def _text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)


class NaivePolicy(Policy):
    """The engine with :func:`naive_decide` in place of the compiled scopes.

    It builds every verdict afresh, so the fast engine's shared verdicts are
    checked too.
    """

    def _decide(self, agent: str, tool: str, args: Mapping[str, Any]) -> Rule | None:
        rule = naive_decide(self.spec.agents.get(agent, ()), tool, args)
        return rule if rule is not None else naive_decide(self.spec.rules, tool, args)

    def _verdict(
        self, call: ToolCall, risk: Risk, rule: Rule | None, note: str = ""
    ) -> PolicyVerdict:
        return self._build_verdict(call.tool, risk, rule, note)


# Glob tokens with the text each may match, so that calls can be built to meet
# the rules; the literals include every regex metacharacter, which a combined
# pattern must keep escaped, and an unclosed "[" (a literal to fnmatch).
TOKENS: dict[str, list[str]] = {
    "a": ["a"],
    "b": ["b"],
    "/": ["/"],
    " ": [" "],
    "*": ["", "a", "b/a", " b"],
    "?": ["a", "/", "."],
    "[ab]": ["a", "b"],
    "[!a]": ["b", "."],
    "[": ["["],
    **{m: [m] for m in ["(", ")", "+", "$", "^", "\\", "|", "{", ".", "%2e", ".."]},
}
VALUE_TEXT = st.lists(st.sampled_from([t for ts in TOKENS.values() for t in ts]), max_size=5)
VALUE = VALUE_TEXT.map("".join) | st.integers(-2, 12) | st.lists(st.sampled_from("ab"), max_size=2)
TOOLS = ["sh", "read", "ab", "a.b", "a(b", "x"]
TOOL_GLOB = st.sampled_from(["sh", "read", "a(b", "*", "*", "a*", "?b", "[ar]*", "a.*", "a(*"])
ARG_NAMES = ["cmd", "path", "q"]
ACTIONS: list[Action] = ["allow", "ask", "deny"]
COMMAND_WORDS = ["a", "b", "ab", "a*", "/bin/a", "sudo a", "&&", ";", "|", "$(b)", ">f", "x=1"]

# The strategies below are built once: made inside a draw, each call builds and
# validates a new one (this test took 6 s so, 2.5 s with them built here).
TOKEN_TEXT = {token: st.sampled_from(texts) for token, texts in TOKENS.items()}
GLOB_TOKENS = st.lists(st.sampled_from([*TOKENS, "*", "*"]), min_size=1, max_size=4)
"""Tokens of a glob, ``*`` weighted up so that different globs overlap."""
COIN = st.booleans()
RULE_COUNT = st.integers(0, 14)
RULE_ARG_NAMES = st.lists(st.sampled_from(ARG_NAMES), max_size=3, unique=True)
CALL_ARG_NAMES = st.sets(st.sampled_from(ARG_NAMES))
ACTION = st.sampled_from(ACTIONS)
CALL_COUNT = st.integers(1, 8)
ONE_IN_FOUR = st.integers(0, 3)
COMMAND = st.lists(st.sampled_from(COMMAND_WORDS), max_size=5).map(" ".join)
CWD = st.sampled_from(["/srv", "a", "/"])
AGENT = st.sampled_from("xyz")
RISK: st.SearchStrategy[Risk | None] = st.sampled_from([None, "read_only", "destructive"])
SH_RISK: st.SearchStrategy[Risk] = st.sampled_from(["write", "read_only"])


@st.composite
def rules(draw: st.DrawFn, prefix: str, tokens: dict[tuple[str, str], list[str]]) -> list[Rule]:
    """Rules with zero to three argument globs each, sources named as the loader does.

    ``tokens`` collects each argument glob's tokens, for :func:`cases` to realise.
    """
    out = []
    for i in range(draw(RULE_COUNT)):
        args = {}
        for name in draw(RULE_ARG_NAMES):
            # Reusing an earlier glob makes equal rules, whose tie the YAML order breaks.
            seen = [g for n, g in tokens if n == name]
            reuse: bool = bool(seen) and draw(COIN)
            glob = tokens[(name, draw(st.sampled_from(seen)))] if reuse else draw(GLOB_TOKENS)
            args[name] = "".join(glob)
            tokens[(name, args[name])] = glob
        action = draw(ACTION)
        out.append(Rule(tool=draw(TOOL_GLOB), action=action, args=args, source=f"{prefix}[{i}]"))
    return out


def realise(draw: st.DrawFn, glob: list[str]) -> str:
    """A text the glob matches (or nearly: an unclosed ``[`` may pair with a later ``]``)."""
    return "".join(draw(TOKEN_TEXT[t]) for t in glob)


def loadable(spec: PolicySpec) -> PolicySpec:
    """``spec`` less the path globs the loader refuses (``..`` above the root, ``%2e``, ``\\``)."""

    def keep(rule: Rule) -> Rule:
        paths = path_arguments(tool_for_rule(spec.tools, rule.tool))
        args = {n: g for n, g in rule.args.items() if n not in paths or _normalises(g)}
        return replace(rule, args=args)

    agents = {a: tuple(map(keep, scoped)) for a, scoped in spec.agents.items()}
    return replace(spec, rules=tuple(map(keep, spec.rules)), agents=agents)


def _normalises(glob: str) -> bool:
    try:
        normalise_glob(glob)
    except ValueError:
        return False
    return True


@st.composite
def cases(draw: st.DrawFn) -> tuple[PolicySpec, list[ToolCall]]:
    """A policy and calls whose arguments often realise its globs, so rules collide."""
    tokens: dict[tuple[str, str], list[str]] = {}
    agents = {
        a: tuple(draw(rules(f"policy.agents.{a}.rules", tokens))) for a in ("x", "y") if draw(COIN)
    }
    spec = loadable(
        PolicySpec(
            tools=(
                ToolSpec(name="sh", shell="cmd", risk=draw(SH_RISK)),
                ToolSpec(name="a*", risk="read_only", paths=("q",), source="policy.tools[1]"),
            ),
            rules=tuple(draw(rules("policy.rules", tokens))),
            agents=agents,
        )
    )
    agents = dict(spec.agents)
    every = [*spec.rules, *(r for scoped in agents.values() for r in scoped)]
    out = []
    for _ in range(draw(CALL_COUNT)):
        # Most calls are built to meet one rule: a tool its glob matches,
        # its argument globs realised; other rules then collide by chance.
        aimed: bool = bool(every) and draw(ONE_IN_FOUR) > 0
        target = draw(st.sampled_from(every)) if aimed else None
        args: dict[str, Any] = {n: draw(VALUE) for n in draw(CALL_ARG_NAMES)}
        tools = TOOLS
        if target is not None:
            args |= {n: realise(draw, tokens[(n, g)]) for n, g in target.args.items()}
            tools = [t for t in TOOLS if fnmatch.fnmatchcase(t, target.tool)] or TOOLS
        if draw(ONE_IN_FOUR) == 0:
            args["cmd"] = draw(COMMAND)
        if draw(ONE_IN_FOUR) == 0:
            args["cwd"] = draw(CWD)
        tool, agent = draw(st.sampled_from(tools)), draw(AGENT)
        risk: Risk | None = draw(RISK)
        out.append(ToolCall(tool=tool, arguments=args, agent=agent, risk=risk))
    return spec, out


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fast_engine_agrees_with_the_naive_loop(case: tuple[PolicySpec, list[ToolCall]]) -> None:
    spec, batch = case
    fast, naive = Policy(spec), NaivePolicy(spec)
    for call in batch:
        assert fast.evaluate(call) == naive.evaluate(call), call


def _rule(i: int, tool: str, action: Action, **args: str) -> Rule:
    return Rule(tool=tool, action=action, args=args, source=f"policy.rules[{i}]")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"cmd": "git status", "dir": "/etc"}, "policy.rules[3]"),  # deny: both globs match
        ({"cmd": "git status", "dir": "/srv"}, "policy.rules[1]"),  # the deny needs both
        ({"cmd": "git push", "dir": "/srv"}, "policy.rules[2]"),  # first of two equal asks
        ({"cmd": "ls"}, "policy.rules[5]"),  # a literal glob, ahead of an unconditional allow
        ({"cmd": "(x)+$"}, "policy.rules[6]"),  # metacharacters stay literal
        ({"cmd": "make"}, "policy.rules[0]"),  # the unconditional rule ends the list
    ],
)
def test_priority_order_across_literals_globs_and_several_arguments(
    args: dict[str, str], expected: str
) -> None:
    policy = Policy(
        PolicySpec(
            rules=(
                _rule(0, "t", "allow"),
                _rule(1, "t", "ask", cmd="git st*"),
                _rule(2, "t", "ask", cmd="git *"),
                _rule(3, "t*", "deny", cmd="git*", dir="/etc"),
                _rule(4, "t", "allow", cmd="git push"),
                _rule(5, "t", "ask", cmd="ls"),
                _rule(6, "t", "ask", cmd="(x)+$"),
                _rule(7, "t", "ask", cmd="ls"),
            )
        )
    )
    assert policy.evaluate(ToolCall(tool="t", arguments=args)).rule == expected


def test_a_bad_argument_glob_fails_at_load_with_its_path() -> None:
    with pytest.raises(PolicyError, match=r"policy.rules\[1\].args.cmd"):
        Policy(PolicySpec(rules=(_rule(0, "t", "allow"), _rule(1, "u", "deny", cmd=""))))


def test_many_rules_of_one_tool_agree_with_the_naive_loop() -> None:
    """A long shell allow list, the case the combined regex is for."""
    words = ["git", "npm", "ls", "cat", "rm", "docker", "make", "python"]
    spec = PolicySpec(
        tools=(ToolSpec(name="Bash", shell="command"),),
        rules=tuple(
            _rule(i, "Bash", ACTIONS[i % 3], command=f"{words[i % 8]} {'[a-c]' * (i % 5 > 0)}{i}*")
            for i in range(300)
        ),
    )
    fast, naive = Policy(spec), NaivePolicy(spec)
    for i in range(400):
        command = f"{words[i % 8]} {'b' if i % 2 else ''}{i % 320} x && {words[i % 7]} {i}"
        call = ToolCall(tool="Bash", arguments={"command": command})
        assert fast.evaluate(call) == naive.evaluate(call), command
