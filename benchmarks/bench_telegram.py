"""Telegram against LINE in the same run: press-to-resume and ask-to-first-card-byte.

Run: ``python benchmarks/bench_telegram.py [--quick] [--rounds 3]``. One
``tapgate serve`` process (SQLite) with LINE and Telegram (webhook mode) both
on, alice on both; this process plays the agent, both fake platform APIs and
both platforms' webhook calls. Each request is decided on one channel, the
channels alternating request by request (interleaved), so both see the same
server, database and machine load.

1. press-to-resume: the agent long-polls ``GET /v1/tool-calls/{id}?wait=30``;
   we POST a LINE postback (signed) or a Telegram ``callback_query`` update
   (secret header) and time until the long poll answers. Target: Telegram's
   p99 within 1.5x LINE's.
2. ask-to-first-card-byte: from the agent's ``POST /v1/tool-calls`` to the
   fake platform receiving the card (LINE push, Telegram ``sendMessage``), for
   the same asks. Target: within 1.5x LINE's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from tests.fakes import FakeLine
from tests.fakes.taps import signed_line_tap
from tests.fakes.telegram import BOT_TOKEN, FakeTelegram, webhook_headers

import bench_server
from _util import pct, verdict
from bench_server import AUTH, LINE_TOKEN, SECRET, Server, ask

TELEGRAM_USER = "111111111"
WEBHOOK_SECRET = "bench-webhook-secret"


def config_text(db: Path, line_url: str, port: int, telegram_url: str) -> str:
    return textwrap.dedent(f"""
        server: {{host: 127.0.0.1, port: {port}, heartbeat_interval: 5}}
        store: {{url: "sqlite:///{db}"}}
        agents: [{{name: bench, token: "{bench_server.AGENT_TOKEN}", max_pending: 0,
                   asks_per_minute: 0}}]
        approvers: [{{name: alice, line: "{bench_server.APPROVER}", telegram: "{TELEGRAM_USER}"}}]
        channels:
          line: {{channel_access_token: "{LINE_TOKEN}", channel_secret: "{SECRET}",
                  api_base_url: "{line_url}"}}
          telegram: {{bot_token: "{BOT_TOKEN}", mode: webhook, webhook_secret: {WEBHOOK_SECRET},
                      api_base_url: "{telegram_url}", pace: 0.001}}
        policy:
          default_timeout: 1h
          rules: [{{tool: deploy, action: ask}}]
    """)


async def one_round(n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"line": [], "telegram": [], "line_card": [], "telegram_card": []}
    async with (
        FakeLine(access_token=LINE_TOKEN) as line,
        FakeTelegram(started={TELEGRAM_USER}) as telegram,
    ):
        with tempfile.TemporaryDirectory() as tmp:
            server = Server(Path(tmp), line.url)
            server.config.write_text(
                config_text(Path(tmp) / "bench.db", line.url, server.port, telegram.url)
            )
            async with server, aiohttp.ClientSession() as agent, aiohttp.ClientSession() as hook:
                for i in range(n):
                    asked = time.monotonic()
                    rid = await ask(agent, server.url, i)
                    while len(line.pushes) <= i or len(telegram.messages) <= i:
                        await asyncio.sleep(0.001)
                    out["line_card"].append((line.requests_to("push")[i].time - asked) * 1000)
                    sent = telegram.requests_to("sendMessage")[i].time
                    out["telegram_card"].append((sent - asked) * 1000)
                    poll = asyncio.create_task(
                        agent.get(f"{server.url}/v1/tool-calls/{rid}?wait=30", headers=AUTH)
                    )
                    await asyncio.sleep(0.01)  # let the long poll park on the server
                    on_telegram = i % 2 == 1
                    if on_telegram:
                        card = telegram.in_chat(TELEGRAM_USER)[-1]
                        update = await telegram.press(TELEGRAM_USER, card, card.data("✅ Approve"))
                        start = time.perf_counter()
                        url = server.url + "/webhooks/telegram"
                        headers = webhook_headers(WEBHOOK_SECRET)
                        async with hook.post(url, json=update, headers=headers) as r:
                            assert r.status == 200
                    else:
                        body, headers = signed_line_tap(SECRET, bench_server.APPROVER, rid)
                        start = time.perf_counter()
                        url = server.url + "/webhooks/line"
                        async with hook.post(url, data=body, headers=headers) as r:
                            assert r.status == 200
                    response = await poll
                    decided = await response.json()
                    out["telegram" if on_telegram else "line"].append(
                        (time.perf_counter() - start) * 1000
                    )
                    response.release()
                    assert decided["status"] == "approved", decided
    return out


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="60 requests a round, not 400")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = 60 if args.quick else 400
    press, card = [], []
    for r in range(args.rounds):
        got = await one_round(n)
        p99 = {k: pct(v, 99) for k, v in got.items()}
        press.append(p99["telegram"] / p99["line"])
        card.append(statistics.median(got["telegram_card"]) / statistics.median(got["line_card"]))
        print(
            f"round {r + 1}: press-to-resume p99 LINE {p99['line']:.1f} ms, "
            f"Telegram {p99['telegram']:.1f} ms (x{press[-1]:.2f}); ask-to-first-card-byte "
            f"median LINE {statistics.median(got['line_card']):.1f} ms, Telegram "
            f"{statistics.median(got['telegram_card']):.1f} ms (x{card[-1]:.2f}); "
            f"p99 LINE {p99['line_card']:.1f} ms, Telegram {p99['telegram_card']:.1f} ms"
        )
    print(
        f"press-to-resume p99 ratio: median x{statistics.median(press):.2f} "
        f"(spread {min(press):.2f}-{max(press):.2f}); ask-to-first-card-byte median ratio: "
        f"x{statistics.median(card):.2f} (spread {min(card):.2f}-{max(card):.2f})"
    )
    ok = statistics.median(press) <= 1.5 and statistics.median(card) <= 1.5
    return verdict(ok, quick=args.quick)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
