"""Teams against LINE in the same run: press-to-resume and ask-to-first-card-byte.

Run: ``python benchmarks/bench_teams.py [--quick] [--runs 3]``.

One tapgate app (``build_app``, real HTTP on a loopback port, SQLite) has an
approver on both the fake Teams (Entra + Bot Framework keys + Bot Connector,
``tests/fakes/teams.py``) and the fake LINE API. For each measurement, in
alternating order so neither channel always goes first:

- **press-to-resume**: the agent long-polls ``GET /v1/tool-calls/{id}?wait=30``;
  we post a signed press (Teams: an ``adaptiveCard/action`` invoke with an
  RS256 Bot Connector token; LINE: a signed postback) and time until the
  long-poll answers. Teams' includes the full JWT check (the keys are cached
  after the first press, as in production) and the card drawn for the invoke
  response; LINE answers 200 and decides after it.
- **ask-to-first-card-byte**: from the agent's ``POST /v1/tool-calls`` to the
  fake platform receiving the card (Teams also fetches the bot's token once).

Reported: p50 / p99 per channel and the ratio Teams / LINE per run, then the
spread of the ratios over the runs. Teams paces cards to one chat half a
second apart, so measurements are spaced by that much (a platform limit, not
measured here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from aiohttp import web
from tests.fakes import FakeLine
from tests.fakes.taps import signed_line_tap
from tests.fakes.teams import TENANT, FakeTeams, oid

from _util import pct, verdict
from tapgate.config import parse_config
from tapgate.decisions.buttons import postback_data
from tapgate.server.app import build_app

SECRET = "bench-channel-secret"
LINE_TOKEN = "bench-line-token"
AGENT = "bench-agent-token-0123456789"
AUTH = {"Authorization": f"Bearer {AGENT}"}
LINE_USER = "U" + "b" * 32
PACE = 0.55


async def ask(session: aiohttp.ClientSession, url: str, tool: str, n: int) -> str:
    body = {"tool": tool, "arguments": {"n": n}}
    async with session.post(f"{url}/v1/tool-calls", json=body, headers=AUTH) as response:
        answer = await response.json()
        assert answer["decision"] == "pending", answer
        return str(answer["id"])


async def until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError("the card never came")
        await asyncio.sleep(0.0005)


async def one(
    kind: str, n: int, url: str, agent: aiohttp.ClientSession, teams: FakeTeams, line: FakeLine
) -> tuple[float, float]:
    """(ask-to-first-card-byte, press-to-resume) in ms for one request on ``kind``."""
    sent = len(teams.requests_to("send")) if kind == "teams" else len(line.requests_to("push"))
    started = time.monotonic()
    rid = await ask(agent, url, f"deploy_{kind}", n)
    if kind == "teams":
        await until(lambda: len(teams.requests_to("send")) > sent)
        first = teams.requests_to("send")[sent].time
    else:
        await until(lambda: len(line.requests_to("push")) > sent)
        first = line.requests_to("push")[sent].time
    poll = asyncio.create_task(agent.get(f"{url}/v1/tool-calls/{rid}?wait=30", headers=AUTH))
    await asyncio.sleep(0.01)  # let the long-poll park on the server
    if kind == "teams":
        body = json.dumps(teams.press(1, postback_data("approve", rid))).encode()
        headers = teams.headers(teams.sign(now=time.time()))
        path = "/webhooks/teams"
    else:
        body, headers = signed_line_tap(SECRET, LINE_USER, rid)
        path = "/webhooks/line"
    start = time.perf_counter()
    async with agent.post(url + path, data=body, headers=headers) as response:
        assert response.status == 200, await response.text()
    answered = await poll
    decided = await answered.json()
    resumed = (time.perf_counter() - start) * 1000
    answered.release()
    assert decided["status"] == "approved", decided
    return (first - started) * 1000, resumed


async def run(n: int) -> dict[str, tuple[list[float], list[float]]]:
    async with FakeTeams() as teams, FakeLine(access_token=LINE_TOKEN) as line:
        with tempfile.TemporaryDirectory() as tmp:
            config = parse_config(
                {
                    "store": {"url": f"sqlite:///{tmp}/bench.db"},
                    "agents": [
                        {"name": "ci", "token": AGENT, "max_pending": 0, "asks_per_minute": 0}
                    ],
                    "approvers": [
                        {"name": "tina", "teams": f"{TENANT}/{oid(1)}"},
                        {"name": "lena", "line": LINE_USER},
                    ],
                    "channels": {
                        "console": {"enabled": False},
                        "tap_log": "off",
                        "teams": teams.settings(),
                        "line": {
                            "channel_access_token": LINE_TOKEN,
                            "channel_secret": SECRET,
                            "api_base_url": line.url,
                        },
                    },
                    "policy": {
                        "rules": [
                            {"tool": "deploy_teams", "action": "ask", "approvers": ["tina"]},
                            {"tool": "deploy_line", "action": "ask", "approvers": ["lena"]},
                        ]
                    },
                },
                env={},
            )
            runner = web.AppRunner(build_app(config), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            host, port = runner.addresses[0][:2]
            url = f"http://{host}:{port}"
            out: dict[str, tuple[list[float], list[float]]] = {"teams": ([], []), "line": ([], [])}
            try:
                async with aiohttp.ClientSession() as agent:
                    install = json.dumps(teams.installed(1)).encode()
                    headers = teams.headers(teams.sign(now=time.time()))
                    async with agent.post(url + "/webhooks/teams", data=install, headers=headers):
                        pass
                    for i in range(-2, n):  # two warm-up rounds, not counted
                        order = ("teams", "line") if i % 2 == 0 else ("line", "teams")
                        for kind in order:
                            card, resume = await one(kind, i, url, agent, teams, line)
                            if i >= 0:
                                out[kind][0].append(card)
                                out[kind][1].append(resume)
                        await asyncio.sleep(PACE)
            finally:
                await runner.cleanup()
            return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run of 10 requests per channel")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-n", type=int, default=100, help="requests per channel per run")
    args = parser.parse_args()
    n = 10 if args.quick else args.n
    runs = 1 if args.quick else args.runs  # quick: it runs, nothing judged (rounds are paced)
    ratios: list[float] = []
    for number in range(1, runs + 1):
        result = asyncio.run(run(n))
        (t_card, t_resume), (l_card, l_resume) = result["teams"], result["line"]
        ratio = pct(t_resume, 99) / pct(l_resume, 99)
        ratios.append(ratio)
        print(
            f"run {number}: press-to-resume p50/p99 Teams {pct(t_resume, 50):.1f}/"
            f"{pct(t_resume, 99):.1f} ms, LINE {pct(l_resume, 50):.1f}/{pct(l_resume, 99):.1f} ms"
            f" (p99 ratio {ratio:.2f}); ask-to-first-card p50 Teams {pct(t_card, 50):.1f} ms,"
            f" LINE {pct(l_card, 50):.1f} ms (n={n})"
        )
    print(
        f"Teams/LINE press-to-resume p99 ratio over {runs} runs: median "
        f"{statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}"
    )
    return verdict(statistics.median(ratios) <= 1.5, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
