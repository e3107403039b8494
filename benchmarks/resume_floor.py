"""Tap-to-resume against its floor, sample by sample in the same run.

The floor (``RESUME_FLOOR``, a script run as its own process: ``python
script.py PORT SECRET LINE_URL LINE_TOKEN``) is the least any server can do
between a signed LINE tap arriving and the waiting agent's long-poll
answering: verify the signature on the raw bytes, wake the one parked
long-poll the postback names, answer 200, then send the LINE reply. It keeps
nothing on disk, checks no approver, writes no audit line: tapgate can only
cost more, and the ratio says how much more.

:func:`resume_against_floor` alternates one tapgate sample with one floor
sample (which goes first alternates too), so both see the same machine; each
run reports p50 and p99 of each and their ratios, and the spread over runs
is printed. ``bench_server.py`` runs it by default, so a regression of the
tap path shows in its figure table the day it lands.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from _util import pct

__all__ = [
    "RESUME_FLOOR",
    "Resume",
    "floor_server",
    "report",
    "resume_against_floor",
    "timed_tap",
]

RESUME_FLOOR = textwrap.dedent("""
    import asyncio, base64, hashlib, hmac, json, secrets, sys
    from urllib.parse import parse_qs
    import aiohttp
    from aiohttp import web
    SECRET = sys.argv[2].encode()
    REPLY_URL = sys.argv[3] + "/v2/bot/message/reply"
    parked = {}  # request id -> the future its long-poll waits on
    replies = set()

    async def ask(request):
        await request.read()
        rid = secrets.token_urlsafe(16)
        parked[rid] = asyncio.get_running_loop().create_future()
        return web.json_response({"id": rid, "decision": "pending"})

    async def poll(request):
        waiter = parked[request.match_info["rid"]]
        status = await asyncio.wait_for(asyncio.shield(waiter), float(request.query["wait"]))
        return web.json_response({"id": request.match_info["rid"], "status": status})

    async def reply(session, token):
        text = "Approved - deploy (request 3fA9xK2b)"
        body = json.dumps({"replyToken": token, "messages": [{"type": "text", "text": text}]})
        async with session.post(REPLY_URL, data=body.encode()) as r:
            await r.read()

    async def tap(request):
        body = await request.read()
        sig = base64.b64encode(hmac.new(SECRET, body, hashlib.sha256).digest()).decode()
        if not hmac.compare_digest(sig, request.headers.get("X-Line-Signature", "")):
            return web.Response(status=401)
        event = json.loads(body)["events"][0]
        rid = parse_qs(event["postback"]["data"])["r"][0]
        waiter = parked.pop(rid)
        if not waiter.done():
            waiter.set_result("approved")
        task = asyncio.create_task(reply(request.app["session"], event["replyToken"]))
        replies.add(task)
        task.add_done_callback(replies.discard)
        return web.json_response({})

    async def session(app):
        app["session"] = aiohttp.ClientSession(
            headers={"Authorization": "Bearer " + sys.argv[4], "Content-Type": "application/json"},
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        print("ready", flush=True)
        yield
        await asyncio.gather(*replies, return_exceptions=True)
        await app["session"].close()

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.router.add_post("/v1/tool-calls", ask)
    app.router.add_get("/v1/tool-calls/{rid}", poll)
    app.router.add_post("/webhooks/line", tap)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
""")

Sample = Callable[[], Awaitable[float]]
"""One tap-to-resume sample against one server, in milliseconds."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Resume:
    """One run's tap-to-resume samples (ms) for tapgate and the floor, taken alternately."""

    tapgate: list[float]
    floor: list[float]

    def ratio(self, q: int) -> float:
        """tapgate's ``q``-th percentile over the floor's."""
        return pct(self.tapgate, q) / pct(self.floor, q)


@contextlib.asynccontextmanager
async def floor_server(
    tmp: Path, port: int, secret: str, line_url: str, token: str
) -> AsyncIterator[str]:
    """``RESUME_FLOOR`` in a process of its own, replying to ``line_url``; yields its URL."""
    script = tmp / "resume_floor_server.py"
    script.write_text(RESUME_FLOOR)
    argv = [sys.executable, str(script), str(port), secret, line_url, token]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        await asyncio.to_thread(proc.stdout.readline)
        url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            for _ in range(400):  # the cleanup context runs before the socket is bound
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.post(url + "/webhooks/line", data=b"x"):
                        break
                await asyncio.sleep(0.025)
        yield url
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)
        if proc.stdout:
            proc.stdout.close()


async def resume_against_floor(tapgate: Sample, floor: Sample, n: int) -> Resume:
    """``n`` samples of each, alternating which goes first, after a few of each to warm up."""
    for _ in range(5):
        await tapgate()
        await floor()
    ours: list[float] = []
    theirs: list[float] = []
    for i in range(n):
        if i % 2 == 0:
            ours.append(await tapgate())
            theirs.append(await floor())
        else:
            theirs.append(await floor())
            ours.append(await tapgate())
    return Resume(tapgate=ours, floor=theirs)


def report(runs: list[Resume]) -> tuple[float, float, float]:
    """Print each run and the spread; return tapgate's median p99 and the median p99/p50 ratios."""
    for number, run in enumerate(runs, 1):
        print(
            f"tap-to-resume run {number}: tapgate p50 {pct(run.tapgate, 50):.2f} ms, "
            f"p99 {pct(run.tapgate, 99):.2f} ms; floor p50 {pct(run.floor, 50):.2f} ms, "
            f"p99 {pct(run.floor, 99):.2f} ms; ratio p50 {run.ratio(50):.2f}, "
            f"p99 {run.ratio(99):.2f} ({len(run.tapgate)} samples each)"
        )
    p99s = [pct(run.tapgate, 99) for run in runs]
    p99_ratios = [run.ratio(99) for run in runs]
    p50_ratios = [run.ratio(50) for run in runs]
    print(
        f"tap-to-resume over {len(runs)} runs: tapgate p99 median {statistics.median(p99s):.2f} ms "
        f"(spread {min(p99s):.2f} - {max(p99s):.2f}; target <= 10 ms); p99 / floor "
        f"{statistics.median(p99_ratios):.2f} ({min(p99_ratios):.2f} - {max(p99_ratios):.2f}; "
        f"target <= 4); p50 / floor {statistics.median(p50_ratios):.2f} "
        f"({min(p50_ratios):.2f} - {max(p50_ratios):.2f}; target <= 2)"
    )
    return statistics.median(p99s), statistics.median(p99_ratios), statistics.median(p50_ratios)


async def timed_tap(
    agent: aiohttp.ClientSession,
    poll_url: str,
    tapper: aiohttp.ClientSession,
    tap_url: str,
    rid: str,
    tap: tuple[bytes, dict[str, str]],
    headers: dict[str, str],
) -> float:
    """Park a long-poll on ``rid`` at ``poll_url``, POST the signed ``tap`` to ``tap_url``.

    Returns the milliseconds from sending the tap until the long-poll
    answered (two servers for the cross-replica figure, one otherwise).
    """
    target = f"{poll_url}/v1/tool-calls/{rid}?wait=30"
    poll = asyncio.create_task(agent.get(target, headers=headers))
    await asyncio.sleep(0.01)  # let the long-poll park on the server
    body, tap_headers = tap
    start = time.perf_counter()
    async with tapper.post(tap_url + "/webhooks/line", data=body, headers=tap_headers) as r:
        assert r.status == 200, r.status
    response = await poll
    decided = await response.json()
    took = (time.perf_counter() - start) * 1000
    response.release()
    assert decided["status"] == "approved", decided
    return took
