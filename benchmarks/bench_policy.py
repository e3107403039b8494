"""Policy decisions per second at 10, 100 and 1,000 rules, against a naive fnmatch loop.

Run: ``python benchmarks/bench_policy.py``. Targets: median <= 5 us per
decision at 1,000 rules, and >= 50x faster than the naive loop over the same
rules (the baseline, measured in the same run).
"""

from __future__ import annotations

import fnmatch
import random
import sys
from typing import Any

from _util import machine, per_call_us
from tapgate.core.models import Action, ToolCall
from tapgate.core.policy import Policy
from tapgate.core.rules import PolicySpec, Rule

RANK = {"allow": 0, "ask": 1, "deny": 2}


def make_rules(n: int, rng: random.Random) -> tuple[Rule, ...]:
    """A realistic mix: literal tool names, tool globs, and argument globs."""
    rules = []
    for i in range(n):
        action: Action = rng.choice(["allow", "allow", "ask", "deny"])
        kind = i % 10
        if kind < 6:
            rules.append(Rule(tool=f"tool_{i}", action=action, source=f"r[{i}]"))
        elif kind < 8:
            rules.append(Rule(tool=f"svc{i}_*", action=action, source=f"r[{i}]"))
        else:
            rules.append(
                Rule(
                    tool=f"files_{i % 7}",
                    action=action,
                    args={"path": f"/srv/{i}/*"},
                    source=f"r[{i}]",
                )
            )
    return tuple(rules)


def make_calls(n: int, rng: random.Random) -> list[ToolCall]:
    calls = []
    for _ in range(200):
        i = rng.randrange(n)
        calls.append(
            rng.choice(
                [
                    ToolCall(tool=f"tool_{i}", arguments={"x": i}),
                    ToolCall(tool=f"svc{i}_restart", arguments={"name": "web"}),
                    ToolCall(tool=f"files_{i % 7}", arguments={"path": f"/srv/{i}/a.txt"}),
                    ToolCall(tool="unknown_tool", arguments={}),
                ]
            )
        )
    return calls


def naive(rules: tuple[Rule, ...], call: ToolCall) -> tuple[str, str | None]:
    """The baseline: scan every rule with fnmatch on every call."""
    best: Rule | None = None
    for rule in rules:
        if not fnmatch.fnmatchcase(call.tool, rule.tool):
            continue
        if not all(
            k in call.arguments and fnmatch.fnmatchcase(str(call.arguments[k]), p)
            for k, p in rule.args.items()
        ):
            continue
        if best is None or RANK[rule.action] > RANK[best.action]:
            best = rule
    return (best.action, best.source) if best else ("ask", None)


def bench(n: int) -> dict[str, Any]:
    rng = random.Random(n)
    rules = make_rules(n, rng)
    policy = Policy(PolicySpec(rules=rules))
    calls = make_calls(n, rng)
    for call in calls:  # the two must agree, or the comparison means nothing
        v = policy.evaluate(call)
        expected = naive(rules, call)
        assert v.action == expected[0] and (expected[1] is None or v.rule == expected[1]), call
    it = iter(calls * 10_000)
    ours = per_call_us(lambda: policy.evaluate(next(it)), number=2000)
    it2 = iter(calls * 10_000)
    base = per_call_us(lambda: naive(rules, next(it2)), number=max(20, 20_000 // n))
    return {"rules": n, "tapgate_us": ours, "naive_us": base, "speedup": base / ours}


def main() -> int:
    print(f"# policy decisions ({machine()})")
    print(f"{'rules':>6} {'tapgate us':>11} {'naive fnmatch us':>17} {'speedup':>8}")
    ok = True
    for n in (10, 100, 1000):
        r = bench(n)
        print(
            f"{r['rules']:>6} {r['tapgate_us']:>11.2f} {r['naive_us']:>17.2f} {r['speedup']:>7.0f}x"
        )
        if n == 1000:
            ok = r["tapgate_us"] <= 5.0 and r["speedup"] >= 50
    print("targets (<= 5 us and >= 50x at 1,000 rules):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
