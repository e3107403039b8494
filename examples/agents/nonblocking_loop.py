"""A non-blocking agent loop over tapgate's HTTP API: submit, carry on, re-issue when approved.

The loop never waits for a human. Each turn it (1) reads what was decided
since its last look (``GET /v1/tool-calls?status=decided&after=CURSOR``),
(2) re-issues every call that was approved (the re-issue answers ``allow``
once, consuming the approval, so the call runs exactly once) and forgets the
denied ones, then (3) submits this turn's call without ``wait``: ``allow``
runs it now, ``deny`` drops it, ``pending`` parks it for a later turn.

Run it against ``tapgate serve --config examples/local.yaml`` and approve
with ``tapgate resolve <id> approve --as me --config examples/local.yaml``::

    python examples/agents/nonblocking_loop.py --url http://127.0.0.1:8080 \\
        --token local-agent-token-0123456789
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx

Call = dict[str, Any]


def run_loop(
    client: httpx.Client,
    turns: Iterable[Call | None],
    run: Callable[[Call], None],
    *,
    pause: Callable[[], None] = lambda: None,
) -> dict[str, Call]:
    """One call per turn (``None``: no new call this turn); returns the calls still parked."""
    parked: dict[str, Call] = {}  # request id -> the call, while a human decides
    cursor: str | None = None
    for call in turns:
        params = {"status": "decided"} | ({"after": cursor} if cursor else {})
        decided = client.get("/v1/tool-calls", params=params).raise_for_status().json()
        cursor = decided["next"] or cursor
        for state in decided["tool_calls"]:
            waiting = parked.pop(state["id"], None)
            if waiting is not None and state["decision"] == "allow":
                again = client.post("/v1/tool-calls", json=waiting).raise_for_status().json()
                if again["decision"] == "allow":  # the approval, consumed by this re-issue
                    run(waiting)
        if call is not None:
            answer = client.post("/v1/tool-calls", json=call).raise_for_status().json()
            if answer["decision"] == "allow":
                run(call)
            elif answer["decision"] == "pending":
                parked[answer["id"]] = call
        pause()
    return parked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--token", required=True)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    calls: list[Call | None] = [{"tool": "deploy_web", "arguments": {"env": "prod"}}]
    calls += [None] * (args.turns - 1)
    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.url, headers=headers) as client:
        left = run_loop(client, calls, lambda c: print("running", c), pause=lambda: time.sleep(2))
    print("still waiting for a human:", list(left))


if __name__ == "__main__":
    main()
