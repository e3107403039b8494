"""One card per batch: what a batch costs against a single ask, measured in the same run.

Run: ``python benchmarks/bench_batches.py [--runs 3] [--iterations 200] [--quick]``.

The real app (``build_app``) serves on a loopback port, with the fake Slack
and LINE APIs, in this process (the machine is shared and noisy: A and B
are interleaved, iteration by iteration, so both see the same noise; each
run reports its own figures and the spread across runs is printed).

1. **POST to the Slack message**: from sending ``POST /v1/tool-call-batches``
   with 20 asking calls (B) or ``POST /v1/tool-calls`` with one (A) until the
   fake Slack API receives the ``chat.postMessage`` of the card (its arrival
   time). Target: B's median under 2× A's.
2. **Approve all to the long-poll**: an agent long-polls
   ``GET /v1/tool-call-batches/{id}?wait=30`` on a 20-call batch; a signed
   LINE "Approve all" postback is posted; time until the long-poll answers
   (B), against one ask's long-poll answered by a single signed Approve tap
   (A). Target: B's p99 under 3× A's p99. Each run takes 200 samples per
   side (A and B alternating), so a p99 is read between the two or three
   slowest samples rather than being the single slowest one; the medians are
   printed beside it.

Slack pacing is set to 1 ms here: every iteration posts to the same DM, and the
one-second pace between two messages to one conversation would otherwise be
what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from aiohttp import web
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.slack import DEFAULT_BOT_TOKEN
from tests.fakes.taps import free_port

from _util import QUICK_HELP, machine, verdict
from tapgate.channels.line.signature import line_signature
from tapgate.config import parse_config
from tapgate.server.app import build_app

LINE_SECRET = "bench-channel-secret"
LINE_TOKEN = "bench-line-token"
AGENT = {"Authorization": "Bearer bench-agent-token-0123456789"}
ALICE_SLACK, ALICE_LINE = "U0ALICE", "U" + "a" * 32
BATCH = 20


def config(db: Path, slack_url: str, line_url: str) -> Any:
    return parse_config(
        {
            "server": {"heartbeat_interval": 3600, "max_wait": 60},
            "store": {"url": f"sqlite:///{db}"},
            "agents": [
                {
                    "name": "bench",
                    "token": AGENT["Authorization"].split()[1],
                    # Limits far above what a run asks, so the checks still run (and cost).
                    "max_pending": 1_000_000,
                    "asks_per_minute": 1_000_000,
                }
            ],
            "approvers": [{"name": "alice", "slack": ALICE_SLACK, "line": ALICE_LINE}],
            "channels": {
                "console": {"enabled": False},
                "slack": {
                    "bot_token": DEFAULT_BOT_TOKEN,
                    "signing_secret": "bench-slack-secret",
                    "api_base_url": slack_url,
                    "pace": 0.001,
                },
                "line": {
                    "channel_access_token": LINE_TOKEN,
                    "channel_secret": LINE_SECRET,
                    "api_base_url": line_url,
                },
            },
            "policy": {"default_timeout": "1h", "rules": [{"tool": "deploy", "action": "ask"}]},
        },
        env={},
    )


def signed_postback(data: str) -> tuple[bytes, dict[str, str]]:
    event = {
        "type": "postback",
        "mode": "active",
        "timestamp": int(time.time() * 1000),
        "webhookEventId": uuid.uuid4().hex.upper(),
        "replyToken": uuid.uuid4().hex,
        "deliveryContext": {"isRedelivery": False},
        "source": {"type": "user", "userId": ALICE_LINE},
        "postback": {"data": data},
    }
    body = json.dumps({"destination": "Ubot", "events": [event]}).encode()
    signature = line_signature(LINE_SECRET.encode(), body)
    return body, {"X-Line-Signature": signature, "Content-Type": "application/json"}


class Bench:
    """The server, both fakes and an agent session; one measurement per method."""

    def __init__(self, url: str, slack: FakeSlack, session: aiohttp.ClientSession) -> None:
        self.url, self.slack, self.session = url, slack, session
        self.n = 0

    def _calls(self, count: int) -> list[dict[str, Any]]:
        self.n += 1
        return [{"tool": "deploy", "arguments": {"run": self.n, "i": i}} for i in range(count)]

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self.session.post(self.url + path, json=body, headers=AGENT) as r:
            answer: dict[str, Any] = await r.json()
            assert r.status in (200, 201), answer
            return answer

    async def _slack_post_after(self, count: int) -> float:
        while len(self.slack.posts) <= count:
            await asyncio.sleep(0.0005)
        return self.slack.posts[count].time

    async def to_message(self, batch: bool) -> float:
        """Milliseconds from the POST to the Slack card's arrival at the fake."""
        before = len(self.slack.posts)
        start = time.monotonic()
        if batch:
            await self._post("/v1/tool-call-batches", {"calls": self._calls(BATCH)})
        else:
            await self._post("/v1/tool-calls", self._calls(1)[0])
        return (await self._slack_post_after(before) - start) * 1000

    async def to_resume(self, batch: bool) -> float:
        """Milliseconds from a signed tap to the agent's long-poll answering."""
        before = len(self.slack.posts)
        if batch:
            made = await self._post("/v1/tool-call-batches", {"calls": self._calls(BATCH)})
            poll_path, data = f"/v1/tool-call-batches/{made['id']}", f"b={made['id']}"
            action = "approve_all"
        else:
            made = await self._post("/v1/tool-calls", self._calls(1)[0])
            poll_path, data, action = f"/v1/tool-calls/{made['id']}", f"r={made['id']}", "approve"
        await self._slack_post_after(before)  # a tap comes after the card, not during it
        poll = asyncio.create_task(
            self.session.get(f"{self.url}{poll_path}?wait=30", headers=AGENT)
        )
        await asyncio.sleep(0.01)  # let the long-poll park
        body, headers = signed_postback(f"v=1&a={action}&{data}")
        start = time.perf_counter()
        async with self.session.post(self.url + "/webhooks/line", data=body, headers=headers) as r:
            assert r.status == 200
        response = await poll
        answer = await response.json()
        elapsed = (time.perf_counter() - start) * 1000
        response.release()
        assert answer["status"] in ("approved", "decided"), answer
        return elapsed


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] if len(samples) > 1 else samples[0]


async def one_run(iterations: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
            app = build_app(config(Path(tmp) / "bench.db", slack.url, line.url))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            port = free_port()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            try:
                async with aiohttp.ClientSession() as session:
                    bench = Bench(f"http://127.0.0.1:{port}", slack, session)
                    for _ in range(3):  # warm up both paths
                        await bench.to_message(False)
                        await bench.to_message(True)
                    msg: dict[bool, list[float]] = {False: [], True: []}
                    tap: dict[bool, list[float]] = {False: [], True: []}
                    for i in range(iterations):
                        order = (False, True) if i % 2 == 0 else (True, False)  # interleaved
                        for batch in order:
                            msg[batch].append(await bench.to_message(batch))
                        for batch in order:
                            tap[batch].append(await bench.to_resume(batch))
            finally:
                await runner.cleanup()
    return {
        "single_msg_median": statistics.median(msg[False]),
        "batch_msg_median": statistics.median(msg[True]),
        "single_tap_p99": p99(tap[False]),
        "batch_tap_p99": p99(tap[True]),
        "single_tap_median": statistics.median(tap[False]),
        "batch_tap_median": statistics.median(tap[True]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.iterations = 1, 5
    print(f"bench_batches: {machine()}, {args.runs} runs × {args.iterations} iterations")
    runs = [asyncio.run(one_run(args.iterations)) for _ in range(args.runs)]
    for n, r in enumerate(runs, start=1):
        print(
            f"run {n}: POST→Slack single {r['single_msg_median']:.1f} ms, "
            f"batch of {BATCH} {r['batch_msg_median']:.1f} ms "
            f"(×{r['batch_msg_median'] / r['single_msg_median']:.2f}); "
            f"tap→long-poll p99 single {r['single_tap_p99']:.1f} ms, "
            f"approve all {r['batch_tap_p99']:.1f} ms "
            f"(×{r['batch_tap_p99'] / r['single_tap_p99']:.2f}; medians "
            f"{r['single_tap_median']:.1f} / {r['batch_tap_median']:.1f} ms)"
        )
    msg_ratio = [r["batch_msg_median"] / r["single_msg_median"] for r in runs]
    tap_ratio = [r["batch_tap_p99"] / r["single_tap_p99"] for r in runs]
    print(
        f"POST→Slack ratio: median ×{statistics.median(msg_ratio):.2f} "
        f"(spread ×{min(msg_ratio):.2f}–×{max(msg_ratio):.2f}; target < ×2)"
    )
    print(
        f"Approve all p99 ratio: median ×{statistics.median(tap_ratio):.2f} "
        f"(spread ×{min(tap_ratio):.2f}–×{max(tap_ratio):.2f}; target < ×3)"
    )
    ok = statistics.median(msg_ratio) < 2 and statistics.median(tap_ratio) < 3
    sys.exit(verdict(ok, quick=args.quick))


if __name__ == "__main__":
    main()
