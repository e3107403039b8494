"""An agent whose model emits several tool calls in one turn: one batch, one card, one wait.

``POST /v1/tool-call-batches`` decides every call by policy at once; the calls
that need a human become one batch, shown to each approver as one card with
"Approve all" / "Deny all". ``GET /v1/tool-call-batches/{id}?wait=S`` then
returns every decision, in the order the model emitted the calls.

Run it against ``tapgate serve --config examples/local.yaml``::

    python examples/agents/parallel_batch.py --url http://127.0.0.1:8080 \\
        --token local-agent-token-0123456789
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import httpx

Call = dict[str, Any]


def run_turn(
    client: httpx.Client, calls: Sequence[Call], run: Callable[[Call], None], *, wait: float = 60
) -> list[dict[str, Any]]:
    """Gate one turn's calls as one batch; run the allowed ones; return every call's state."""
    batch = client.post("/v1/tool-call-batches", json={"calls": list(calls)})
    batch = batch.raise_for_status().json()
    while batch["status"] == "pending":  # long-poll in slices until every call is decided
        polled = client.get(
            f"/v1/tool-call-batches/{batch['id']}", params={"wait": wait}, timeout=wait + 10
        )
        batch = polled.raise_for_status().json()
    for call, state in zip(calls, batch["calls"], strict=True):
        if state["decision"] == "allow":
            run(call)
        else:  # hand the reason back to the model, so it can change course
            print(f"{call['tool']} was not run: {state['reason']}")
    return list(batch["calls"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--token", required=True)
    args = parser.parse_args()
    calls = [
        {"tool": "Read", "arguments": {"file_path": "README.md"}},
        {"tool": "deploy_web", "arguments": {"env": "staging"}},
        {"tool": "deploy_web", "arguments": {"env": "prod"}},
    ]
    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.url, headers=headers, timeout=90) as client:
        run_turn(client, calls, lambda c: print("running", c))


if __name__ == "__main__":
    main()
