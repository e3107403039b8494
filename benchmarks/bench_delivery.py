"""Delivery latency and a burst, through the real dispatcher, SDK clients and fake APIs.

Run: ``python benchmarks/bench_delivery.py [--quick]``.

1. Latency from ``gate.submit`` creating a request to the push request
   arriving at the fake LINE API, and to the post arriving at the fake Slack
   API (p50 / p99 over sequential asks). Baseline in the same run: one bare
   SDK push / post to the same fake, timed the same way.
2. A burst of 1,000 asks spread over 20 approvers' Slack DMs with a pace of
   0.1 s per conversation: all delivered exactly once, and the fastest rate
   observed in any conversation is reported against the limit.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

from linebot.v3.messaging import (
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    PushMessageRequest,
    TextMessage,
)
from slack_sdk.web.async_client import AsyncWebClient
from tests.fakes import FakeLine, FakeSlack

from _util import QUICK_HELP, machine, pct, verdict
from tapgate.channels.line.notifier import LineNotifier
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.delivery import Dispatcher
from tapgate.gate import Approver, Directory, Gate, ToolCall
from tapgate.policy import Policy, PolicySpec, Rule
from tapgate.store import Store

LINE_TOKEN = "line-token"
SLACK_TOKEN = "xoxb-bench"


async def latency(n: int = 200) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"line": [], "slack": []}
    async with (
        FakeLine(access_token=LINE_TOKEN, clock=time.perf_counter) as line,
        FakeSlack(bot_token=SLACK_TOKEN, clock=time.perf_counter) as slack,
    ):
        with tempfile.TemporaryDirectory() as tmp:
            store = await Store.open(f"sqlite:///{Path(tmp) / 'lat.db'}")
            directory = Directory(
                [Approver(name="alice", addresses=(("line", "U" + "a" * 32), ("slack", "UA")))],
                channels=("line", "slack"),
            )
            policy = Policy(PolicySpec(rules=(Rule(tool="*", action="ask", source="r"),)))
            async with Gate(store=store, policy=policy, directory=directory) as gate:
                dispatcher = Dispatcher(
                    store,
                    [
                        LineNotifier(LINE_TOKEN, api_base_url=line.url),
                        SlackNotifier(SLACK_TOKEN, api_base_url=slack.url),
                    ],
                    bus=gate.bus,
                )
                async with dispatcher:
                    for i in range(n):
                        pushes, posts = len(line.pushes), len(slack.posts)
                        start = time.perf_counter()
                        await gate.submit(ToolCall(tool="deploy", arguments={"n": i}, agent="a"))
                        while len(line.pushes) == pushes or len(slack.posts) == posts:
                            await asyncio.sleep(0.0005)
                        out["line"].append((line.pushes[-1].time - start) * 1000)
                        out["slack"].append((slack.posts[-1].time - start) * 1000)
            await store.close()
    return out


async def bare(n: int = 200) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"line": [], "slack": []}
    async with (
        FakeLine(access_token=LINE_TOKEN, clock=time.perf_counter) as line,
        FakeSlack(bot_token=SLACK_TOKEN, clock=time.perf_counter) as slack,
        AsyncApiClient(Configuration(host=line.url, access_token=LINE_TOKEN)) as api,
    ):
        messaging = AsyncMessagingApi(api)
        client = AsyncWebClient(token=SLACK_TOKEN, base_url=slack.url)
        for _ in range(n):
            start = time.perf_counter()
            await messaging.push_message(
                PushMessageRequest(to="U" + "a" * 32, messages=[TextMessage(text="hi")]),
                x_line_retry_key=str(uuid.uuid4()),
                _request_timeout=10,
            )
            out["line"].append((line.pushes[-1].time - start) * 1000)
            start = time.perf_counter()
            await client.chat_postMessage(channel="UA", text="hi")
            out["slack"].append((slack.posts[-1].time - start) * 1000)
    return out


async def burst(asks: int = 1000, approvers: int = 20, pace: float = 0.1) -> dict[str, float]:
    async with FakeSlack(bot_token=SLACK_TOKEN, clock=time.perf_counter) as slack:
        with tempfile.TemporaryDirectory() as tmp:
            store = await Store.open(f"sqlite:///{Path(tmp) / 'burst.db'}")
            people = [
                Approver(name=f"p{i}", addresses=(("slack", f"U{i:04d}"),), groups=(f"g{i}",))
                for i in range(approvers)
            ]
            rules = tuple(
                Rule(tool=f"tool{i}", action="ask", approvers=(f"g{i}",), source=f"r[{i}]")
                for i in range(approvers)
            )
            gate = Gate(
                store=store,
                policy=Policy(PolicySpec(rules=rules)),
                directory=Directory(people, channels=("slack",)),
            )
            dispatcher = Dispatcher(
                store,
                [SlackNotifier(SLACK_TOKEN, api_base_url=slack.url)],
                bus=gate.bus,
                pace={"slack": pace},
                concurrency=32,
            )
            start = time.perf_counter()
            async with gate, dispatcher:
                for i in range(asks):
                    await gate.submit(
                        ToolCall(tool=f"tool{i % approvers}", arguments={"n": i}, agent="a")
                    )
                while len(slack.posts) < asks:
                    await asyncio.sleep(0.05)
                elapsed = time.perf_counter() - start
            await store.close()
        per_channel = Counter(p.channel for p in slack.posts)
        gaps = []
        for channel in per_channel:
            times = sorted(slack.post_times(channel))
            gaps += [b - a for a, b in itertools.pairwise(times)]
        keys = Counter(str(p.metadata) for p in slack.posts)
    return {
        "delivered": len(slack.posts),
        "duplicates": sum(c - 1 for c in keys.values()),
        "channels": len(per_channel),
        "min_gap": min(gaps),
        "elapsed": elapsed,
    }


async def main(quick: bool) -> int:
    n, asks = (10, 100) if quick else (200, 1000)
    ours, base = await latency(n), await bare(n)
    print(f"# delivery ({machine()}, fake APIs on loopback)")
    for platform in ("line", "slack"):
        print(
            f"{platform}: ask -> first byte at the API p50 {pct(ours[platform], 50):.2f} ms, "
            f"p99 {pct(ours[platform], 99):.2f} ms; bare SDK call p50 "
            f"{pct(base[platform], 50):.2f} ms, p99 {pct(base[platform], 99):.2f} ms"
        )
    b = await burst(asks)
    rate = 1 / b["min_gap"] if b["min_gap"] > 0 else float("inf")
    print(
        f"burst: {b['delivered']:.0f}/{asks} delivered, {b['duplicates']:.0f} duplicates, "
        f"over {b['channels']:.0f} Slack conversations in {b['elapsed']:.1f} s; "
        f"fastest observed rate in one conversation {rate:.2f}/s (limit 10/s)"
    )
    ok = b["delivered"] == asks and b["duplicates"] == 0 and rate <= 10.0 + 1e-9
    return verdict(ok, quick=quick)


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    sys.exit(asyncio.run(main(cli.parse_args().quick)))
