"""Policy decisions before and after path normalisation, in one process, interleaved.

Run: ``git show main:src/tapgate/core/policy.py > /tmp/policy_before.py`` then
``python benchmarks/bench_policy_paths.py /tmp/policy_before.py``. The two
engines share every other module and the 1,000 rules of ``bench_policy``;
rounds alternate which goes first, so load on a shared machine hits both.
Reported: the median and best-round ratio, for calls without a path argument
(the target: no slower) and with a clean absolute ``path`` (reported).
``--quick`` times this build's ``policy.py`` against itself, two rounds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import timeit
from typing import Any

from _util import QUICK_HELP, machine
from bench_policy import load_policy_class, make_rules
from tapgate.gate.models import ToolCall
from tapgate.policy import engine as policy_module
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec


def _run(engine: Any, batch: list[ToolCall]) -> Any:
    evaluate = engine.evaluate
    return lambda: [evaluate(c) for c in batch]


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("before", nargs="?", help="the policy.py from before")
    cli.add_argument("rounds", nargs="?", type=int, default=40)
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    opts = cli.parse_args()
    if opts.quick:
        opts.before, opts.rounds = opts.before or policy_module.__file__, 2
    if opts.before is None:
        print(__doc__)
        return 2
    rounds = opts.rounds
    rng = random.Random(1000)
    spec = PolicySpec(rules=make_rules(1000, rng))
    engines = {"before": load_policy_class(opts.before)(spec), "after": Policy(spec)}
    calls: dict[str, list[ToolCall]] = {"no path": [], "path": []}
    for _ in range(200):
        i = rng.randrange(1000)
        calls["no path"] += [
            ToolCall(tool=f"tool_{i}", arguments={"x": i}),
            ToolCall(tool=f"svc{i}_restart", arguments={"name": "web"}),
            ToolCall(tool="unknown_tool", arguments={}),
        ]
        calls["path"].append(ToolCall(tool=f"files_{i % 7}", arguments={"path": f"/srv/{i}/a"}))
    times: dict[tuple[str, str], list[float]] = {(e, k): [] for e in engines for k in calls}
    for r in range(rounds):
        order = list(engines) if r % 2 == 0 else list(engines)[::-1]
        for kind, batch in calls.items():
            for name in order:
                best = min(timeit.repeat(_run(engines[name], batch), number=10, repeat=3))
                times[(name, kind)].append(best / (10 * len(batch)) * 1e6)
    print(f"# policy before/after path normalisation, 1,000 rules, {rounds} rounds ({machine()})")
    for kind in calls:
        before, after = times[("before", kind)], times[("after", kind)]
        ratios = [a / b for a, b in zip(after, before, strict=True)]
        print(
            f"{kind:>8}: before {min(before):.2f} us, after {min(after):.2f} us (best rounds); "
            f"after/before median {statistics.median(ratios):.3f}, "
            f"best-round {min(after) / min(before):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
