"""Policy decisions at 1,000 rules against a naive glob loop, interleaved in one process.

Run: ``python benchmarks/bench_policy.py [--runs 3] [--rounds 15] [--before PATH] [--quick]``.
Targets at 1,000 rules: a decision under 5 us on the mix of
calls and under 10 us for the tool with the most rules (``Bash``, 160
command rules), and >= 50x faster than the naive loop over the same rules.

The naive loop is the same engine (tool specs, shell commands, paths) with
the rule matching replaced by fnmatch on every rule, so the ratio measures
the matching alone. ``--before`` loads another ``policy.py`` (``git show
main:src/tapgate/core/policy.py > /tmp/policy_before.py``) and times it
beside the others. Each round times every engine on the same calls, in an
order that rotates, so load on a shared machine hits all of them; the ratios
within a round are what to compare across machines.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import random
import statistics
import sys
import timeit
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from _util import QUICK_HELP, machine, verdict
from tapgate.gate.models import Action, ToolCall, canonical_json
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec

RANK = {"allow": 0, "ask": 1, "deny": 2}
PROGRAMS = ["git", "npm", "pnpm", "ls", "cat", "grep", "find", "rm", "mv", "cp", "docker"]
PROGRAMS += ["kubectl", "make", "python", "pytest", "pip", "cargo", "go", "curl", "sed", "gh"]
VERBS = ["status", "diff", "log", "show", "list", "get", "run", "build", "test", "install"]
VERBS += ["push --force", "delete", "apply", "-rf", "exec", "-la"]
DANGEROUS = {"push --force", "delete", "apply", "-rf", "exec"}
BASH = ToolSpec(name="Bash", risk="write", shell="command", source="policy.tools[0]")


def bash_glob(j: int) -> str:
    """The ``j``-th command glob of an allow list: prefixes, exact lines, ``?`` and ``[...]``."""
    prog, verb = PROGRAMS[j % len(PROGRAMS)], VERBS[(j // len(PROGRAMS) + j) % len(VERBS)]
    shapes = (f"{prog} {verb}*", f"{prog} {verb} *", f"{prog} {verb}")
    return (*shapes, f"{prog} [{verb[0]}]{verb[1:-1]}?*")[j % 4]


def make_rules(n: int, rng: random.Random) -> tuple[Rule, ...]:
    """A realistic mix: literal tool names, tool globs, path globs and a shell allow list."""
    rules = []
    for i in range(n):
        action: Action = rng.choice(["allow", "allow", "ask", "deny"])
        kind, source = i % 50, f"policy.rules[{i}]"
        if kind < 28:
            rules.append(Rule(tool=f"tool_{i}", action=action, source=source))
        elif kind < 36:
            rules.append(Rule(tool=f"svc{i}_*", action=action, source=source))
        elif kind < 42:
            path = {"path": f"/srv/{i}/*"}
            rules.append(Rule(tool=f"files_{i % 7}", action=action, args=path, source=source))
        else:
            glob = bash_glob(i // 50 * 8 + kind - 42)
            verb_action: Action = "deny" if any(d in glob for d in DANGEROUS) else action
            args = {"command": glob}
            rules.append(Rule(tool="Bash", action=verb_action, args=args, source=source))
    return tuple(rules)


def bash_line(rng: random.Random) -> str:
    """A command line as agents send them: one command, a chain, a pipe, a spelled-out path."""
    word = f"{rng.choice(PROGRAMS)} {rng.choice(VERBS)} x{rng.randrange(50)}"
    chain = f"{word} && {rng.choice(PROGRAMS)} {rng.choice(VERBS)}"
    return rng.choice([chain, f"{word} | grep -n foo", f"/usr/bin/{word}", word, word])


def make_calls(n: int, rng: random.Random) -> dict[str, list[ToolCall]]:
    """200 calls of the whole mix, and 200 calls of the tool with the most rules."""
    mix, bash = [], []
    for _ in range(200):
        i = rng.randrange(n)
        mix.append(
            rng.choice(
                [
                    ToolCall(tool=f"tool_{i}", arguments={"x": i}),
                    ToolCall(tool=f"svc{i}_restart", arguments={"name": "web"}),
                    ToolCall(tool=f"files_{i % 7}", arguments={"path": f"/srv/{i}/a.txt"}),
                    ToolCall(tool="unknown_tool", arguments={}),
                    ToolCall(tool="Bash", arguments={"command": bash_line(rng)}),
                ]
            )
        )
        bash.append(ToolCall(tool="Bash", arguments={"command": bash_line(rng)}))
    return {"mix": mix, "Bash": bash}


def naive_decide(rules: Sequence[Rule], tool: str, args: Mapping[str, Any]) -> Rule | None:
    """The baseline: scan every rule with fnmatch on every decision."""
    best: Rule | None = None
    for rule in rules:
        if not fnmatch.fnmatchcase(tool, rule.tool):
            continue
        texts = {k: v if isinstance(v, str) else canonical_json(v) for k, v in args.items()}
        if not all(k in texts and fnmatch.fnmatchcase(texts[k], p) for k, p in rule.args.items()):
            continue
        if best is None or RANK[rule.action] > RANK[best.action]:
            best = rule
    return best


class NaivePolicy(Policy):
    """The whole engine with :func:`naive_decide` doing the matching."""

    def _decide(self, agent: str, tool: str, args: Mapping[str, Any]) -> Rule | None:
        rule = naive_decide(self.spec.agents.get(agent, ()), tool, args)
        return rule if rule is not None else naive_decide(self.spec.rules, tool, args)


def load_policy_class(path: str) -> Any:
    """``Policy`` from another ``policy.py``, sharing every other module with this one."""
    spec = importlib.util.spec_from_file_location("policy_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["policy_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.Policy


def _fields(verdict: Any) -> tuple[Any, ...]:
    """A verdict as plain values: ``--before`` has its own ``PolicyVerdict`` class."""
    return (verdict.action, verdict.rule, verdict.reason, verdict.grantable, verdict.risk)


def _us_per_call(engine: Any, batch: list[ToolCall], number: int) -> float:
    evaluate = engine.evaluate
    best = min(timeit.repeat(lambda: [evaluate(c) for c in batch], number=number, repeat=3))
    return float(best / (number * len(batch)) * 1e6)


Times = dict[tuple[str, str], list[float]]


def one_run(engines: dict[str, Any], calls: dict[str, list[ToolCall]], rounds: int) -> Times:
    """Per engine and batch, each round's microseconds per call."""
    times: Times = {(e, b): [] for e in engines for b in calls}
    names = list(engines)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for batch, items in calls.items():
            for name in order:
                number = 1 if name == "naive" else 10
                times[(name, batch)].append(_us_per_call(engines[name], items, number))
    return times


def _ratio(times: Times, slow: str, fast: str, batch: str) -> float:
    pairs = zip(times[(slow, batch)], times[(fast, batch)], strict=True)
    return statistics.median(s / f for s, f in pairs)


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("--runs", type=int, default=3)
    cli.add_argument("--rounds", type=int, default=15)
    cli.add_argument("--rules", type=int, default=1000)
    cli.add_argument("--before", help="another policy.py to time beside this one")
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    opts = cli.parse_args()
    if opts.quick:
        opts.runs, opts.rounds = 1, 2
    rng = random.Random(opts.rules)
    spec = PolicySpec(tools=(BASH,), rules=make_rules(opts.rules, rng))
    engines: dict[str, Any] = {"after": Policy(spec), "naive": NaivePolicy(spec)}
    if opts.before:
        engines["before"] = load_policy_class(opts.before)(spec)
    calls = make_calls(opts.rules, rng)
    bash_rules = sum(r.tool == "Bash" for r in spec.rules)
    for call in [c for batch in calls.values() for c in batch]:  # all must agree
        verdicts = {name: _fields(e.evaluate(call)) for name, e in engines.items()}
        assert len(set(verdicts.values())) == 1, (call, verdicts)
    print(f"# policy decisions, {opts.rules} rules, Bash has {bash_rules} ({machine()})")
    print("# us per call: median of rounds; ratios: median of the per-round ratios")
    summary: dict[str, list[float]] = {}
    for run in range(opts.runs):
        times = one_run(engines, calls, opts.rounds)
        for batch in calls:
            line = [f"run {run + 1} {batch:>4}:"]
            for name in engines:
                us = statistics.median(times[(name, batch)])
                summary.setdefault(f"{batch} {name} us", []).append(us)
                line.append(f"{name} {us:.2f} us")
            for slow, fast in [("naive", "after"), ("before", "after"), ("naive", "before")]:
                if slow in engines and fast in engines:
                    ratio = _ratio(times, slow, fast, batch)
                    summary.setdefault(f"{batch} {slow}/{fast}", []).append(ratio)
                    line.append(f"{slow}/{fast} {ratio:.1f}x")
            print(", ".join(line))
    print(f"# over {opts.runs} runs of {opts.rounds} rounds: median (min - max)")
    for key, values in summary.items():
        low, high = min(values), max(values)
        print(f"{key:>23}: {statistics.median(values):8.2f} ({low:.2f} - {high:.2f})")
    return verdict(report(summary), quick=opts.quick)


def report(summary: dict[str, list[float]]) -> bool:
    """Targets on the medians over runs; the ratios hold on a loaded machine, the us may not."""
    checks: dict[str, Callable[[], bool]] = {
        "mix < 5 us": lambda: statistics.median(summary["mix after us"]) < 5.0,
        "Bash < 10 us": lambda: statistics.median(summary["Bash after us"]) < 10.0,
        "mix >= 50x naive": lambda: statistics.median(summary["mix naive/after"]) >= 50,
        "Bash >= 50x naive": lambda: statistics.median(summary["Bash naive/after"]) >= 50,
    }
    results = {name: check() for name, check in checks.items()}
    print("targets:", ", ".join(f"{n}: {'met' if ok else 'MISSED'}" for n, ok in results.items()))
    return all(results.values())


if __name__ == "__main__":
    sys.exit(main())
