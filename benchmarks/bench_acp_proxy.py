"""What ``tapgate acp-proxy`` adds to a message it forwards, against the agent spoken to directly.

Run: ``python benchmarks/bench_acp_proxy.py [--messages 300] [--rounds 3]``.

Two connections from the ``agent-client-protocol`` package's own client to
the same test agent (``tests/fakes/acp_agent.py``): one to the agent
directly, one through ``tapgate acp-proxy`` (the installed script, as an
editor starts it). Each turn sends one ``session/prompt`` ``ping`` on each,
interleaved: the agent answers with a ``session/update`` notification and
the prompt's response, so one round trip is three forwarded messages, none a
permission request (tapgate is never asked; its URL points nowhere). Prints,
per round, the median round trip each way and their difference, then the
spread over the rounds. Target: the proxy adds under 1 ms (median).
Exits 1 when the median over the rounds misses it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test agent

from acp import PROTOCOL_VERSION, Client, text_block
from acp.client.connection import ClientSideConnection
from acp.stdio import spawn_agent_process

from _util import QUICK_HELP, machine, verdict

AGENT = str(Path(__file__).resolve().parent.parent / "tests" / "fakes" / "acp_agent.py")
TAPGATE = str(Path(sys.executable).with_name("tapgate"))
TARGET_MS = 1.0


class Quiet:
    """An editor that only listens (the agent never asks permission for ``ping``)."""

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None


async def ping(conn: ClientSideConnection, session: str) -> float:
    started = time.perf_counter()
    await conn.prompt(session_id=session, prompt=[text_block("ping")])
    return (time.perf_counter() - started) * 1000


async def one_round(messages: int) -> tuple[float, float]:
    """Median round trip (ms) direct and through the proxy, interleaved."""
    editor = cast(Client, Quiet())
    proxy = (TAPGATE, "acp-proxy", "--tapgate-url", "http://127.0.0.1:9", "--")
    env = {"TAPGATE_AGENT_TOKEN": "bench-acp-agent-token-0123456789"}
    async with (
        spawn_agent_process(editor, sys.executable, AGENT) as (direct, _),
        spawn_agent_process(editor, *proxy, sys.executable, AGENT, env=env) as (proxied, _),
    ):
        sessions = []
        for conn in (direct, proxied):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            sessions.append((await conn.new_session(cwd="/work/app")).session_id)
        for _ in range(20):  # warm both up
            await ping(direct, sessions[0])
            await ping(proxied, sessions[1])
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(messages):
            times[0].append(await ping(direct, sessions[0]))
            times[1].append(await ping(proxied, sessions[1]))
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rounds = 20, 1
    print(f"# {machine()}; {args.messages} prompts per round, each way, interleaved")
    added = []
    for index in range(1, args.rounds + 1):
        direct, proxied = asyncio.run(one_round(args.messages))
        added.append(proxied - direct)
        print(
            f"round {index}: direct {direct:.3f} ms, through the proxy {proxied:.3f} ms, "
            f"added {proxied - direct:.3f} ms"
        )
    median = statistics.median(added)
    print(f"added: median {median:.3f} ms, spread {min(added):.3f} - {max(added):.3f} ms")
    met = median < TARGET_MS
    print(f"target: under {TARGET_MS:g} ms added: {'met' if met else 'MISSED'}")
    return verdict(met, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
