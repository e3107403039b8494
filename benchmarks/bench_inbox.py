"""The web inbox with 1,000 pending requests against the same inbox with 10.

Run: ``python benchmarks/bench_inbox.py [--runs 3] [--samples 7] [--quick]`` (needs
Debian's ``chromium`` and the ``test`` extra's Playwright).

Two real servers (``build_app``, SQLite files, the fake Slack and LINE APIs)
serve one approver: A with 10 pending requests, B with 1,000 (batches of 50,
as agents send them). One headless Chromium measures, A and B interleaved
sample by sample so both see the same noise on a shared machine:

1. **first render**: from ``page.goto('/inbox')`` until the first card is
   visible (wall clock, in this process), and the page's own
   first-contentful-paint;
2. **first keypress answered**: Return on the focused card until that card
   has left the page (the answer went through ``core.taps`` and the store);
   one request is added back after each, so the queue keeps its size;
3. **page weight**: the bytes of ``/inbox`` (HTML) + ``inbox.css`` +
   ``inbox.js`` as served, uncompressed.

Targets: B under 3x A for 1 and 2 (the median over runs); page
weight under 100 KB, with 10 pending and with 1,000 (its first page). Each run
prints its medians, then each ratio's spread over runs; exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from aiohttp.test_utils import TestServer
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.served import LINE_TOKEN
from tests.fakes.taps import free_port
from tests.web.harness import make_config

from _util import QUICK_HELP, machine, verdict
from tapgate.gate.models import ToolCall
from tapgate.server.app import build_app
from tapgate.server.keys import GATE, SIGN_INS

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"


@dataclass
class Side:
    """One server with ``pending`` requests for alice, and a signed-in page on it."""

    name: str
    server: TestServer
    page: Page
    made: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    async def add(self, count: int) -> None:
        gate = self.server.app[GATE]
        while count > 0:
            size = min(50, count)
            calls = [
                ToolCall(
                    tool="deploy",
                    arguments={"env": f"env-{self.made + i}", "version": "1.4.2"},
                    agent="ci",
                    session="bench",
                )
                for i in range(size)
            ]
            if size == 1:
                await gate.submit(calls[0])
            else:
                await gate.submit_many(calls)
            self.made += size
            count -= size


async def open_side(
    name: str, pending: int, browser: Browser, tmp: str, stack: list[object]
) -> Side:
    slack, line = FakeSlack(), FakeLine(access_token=LINE_TOKEN)
    await slack.__aenter__()
    await line.__aenter__()
    port = free_port()
    config = make_config(slack.url, line.url, f"sqlite:///{tmp}/{name}.db", port)
    server = TestServer(build_app(config), host="127.0.0.1", port=port)
    await server.start_server()
    stack.extend([server, slack, line])
    context = await browser.new_context(viewport={"width": 1000, "height": 760})
    page = await context.new_page()
    side = Side(name=name, server=server, page=page)
    await side.add(pending)
    token = await server.app[SIGN_INS].link("alice", via="bench")
    await page.goto(f"{side.url}/inbox/sign-in?token={token}")
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url("**/inbox")
    return side


async def first_render(side: Side) -> tuple[float, float]:
    """Wall ms until the first card shows, and the page's first-contentful-paint ms."""
    start = time.perf_counter()
    await side.page.goto(f"{side.url}/inbox", wait_until="commit")
    await side.page.locator("article.card").first.wait_for()
    wall = (time.perf_counter() - start) * 1000
    fcp = await side.page.evaluate(
        "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1"
    )
    return wall, float(fcp)


async def first_keypress(side: Side) -> float:
    """Ms from Return on the focused card until it has left the page."""
    target = await side.page.evaluate("document.activeElement.dataset.id")
    start = time.perf_counter()
    await side.page.keyboard.press("Enter")
    await side.page.locator(f"#r-{target}").wait_for(state="detached")
    took = (time.perf_counter() - start) * 1000
    await side.add(1)
    return took


async def weight(side: Side) -> int:
    total = 0
    cookies = await side.page.context.cookies()
    jar = {c["name"]: c["value"] for c in cookies}
    async with aiohttp.ClientSession(cookies=jar) as http:
        for path in ("/inbox", "/inbox/static/inbox.css", "/inbox/static/inbox.js"):
            async with http.get(side.url + path) as response:
                total += len(await response.read())
    return total


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} ms"


async def main(runs: int, samples: int, quick: bool = False) -> int:
    from playwright.async_api import async_playwright

    print(f"web inbox, 10 vs 1,000 pending; {machine()}; {runs} runs x {samples} samples")
    ratios: dict[str, list[float]] = {"render": [], "key": []}
    stack: list[object] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
            )
            small = await open_side("a10", 10, browser, tmp, stack)
            # --quick: past one page (50 cards) is enough to run every path
            large = await open_side("b1000", 60 if quick else 1000, browser, tmp, stack)
            sizes = (await weight(small), await weight(large))
            print(
                f"page weight (HTML+CSS+JS): {sizes[0] / 1024:.1f} KB with 10 pending,"
                f" {sizes[1] / 1024:.1f} KB with 1,000 (first page)"
            )
            for run in range(1, runs + 1):
                render: dict[str, list[float]] = {"a10": [], "b1000": []}
                paint: dict[str, list[float]] = {"a10": [], "b1000": []}
                key: dict[str, list[float]] = {"a10": [], "b1000": []}
                for _ in range(samples):
                    for side in (small, large):
                        wall, fcp = await first_render(side)
                        render[side.name].append(wall)
                        paint[side.name].append(fcp)
                        key[side.name].append(await first_keypress(side))
                r = statistics.median(render["b1000"]) / statistics.median(render["a10"])
                k = statistics.median(key["b1000"]) / statistics.median(key["a10"])
                ratios["render"].append(r)
                ratios["key"].append(k)
                print(
                    f"run {run}: first render {_ms(render['a10'])} vs {_ms(render['b1000'])}"
                    f" ({r:.2f}x; FCP {_ms(paint['a10'])} vs {_ms(paint['b1000'])});"
                    f" first key {_ms(key['a10'])} vs {_ms(key['b1000'])} ({k:.2f}x)"
                )
            await browser.close()
        for item in reversed(stack):
            if isinstance(item, TestServer):
                await item.close()
            else:
                await item.__aexit__(None, None, None)  # type: ignore[attr-defined]
    missed = [f"page weight {max(sizes) / 1024:.1f} KB"] if max(sizes) >= 100 * 1024 else []
    for name, values in ratios.items():
        print(f"{name} ratio 1,000 / 10: {min(values):.2f}x to {max(values):.2f}x over {runs} runs")
        if statistics.median(values) >= 3:
            missed.append(f"{name} ratio {statistics.median(values):.2f}x")
    if missed:
        print("missed: " + ", ".join(missed))
    return verdict(not missed, quick=quick)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP + "; 60 pending, not 1,000")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.samples = 1, 1
    sys.exit(asyncio.run(main(args.runs, args.samples, args.quick)))
