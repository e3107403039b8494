"""Memory of parked long-polls: ``tapgate serve`` against a bare aiohttp long-poll, same run.

Run: ``python benchmarks/bench_long_polls.py [--polls 10000] [--rounds 3] [--quick]``.

The same poller process (``bench_server.POLLER``: one aiohttp session,
``GET /v1/tool-calls/{id}?wait=120`` for every id at once, retrying a refused
connect) parks ``--polls`` long-polls on each server in turn:

- **tapgate**: ``tapgate serve`` on SQLite with LINE enabled (the fake LINE
  API in this process), as ``bench_server.py`` runs it; the requests polled
  were asked once, before the first round, and their approval messages
  delivered, so every round starts a fresh server on the same database and
  the figure is the polls' alone;
- **bare**: an aiohttp handler that checks the bearer token, reads ``wait``
  and parks on one future with one timer: what any long-poll costs in
  aiohttp, and nothing more.

Each server is started fresh, warmed with 200 short GETs, and its resident
memory (VmRSS) read idle, with half the polls parked and with all of them
parked (each time once the server says that many are parked, then one
second to settle). A round runs both servers, rotating who goes first. Per
poll = (all parked - idle) / polls; "the second half" = (all - half) / the
second half's polls: what one more poll costs once the server's caches and
allocator have grown. Targets: tapgate's per-poll memory
<= 1.2x bare's, and its RSS with 10,000 parked < 270 MB (scaled to
``--polls``: idle + 10,000 x per poll).
Exits 1 when the median over the rounds misses one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from tests.fakes import FakeLine

from _util import QUICK_HELP, machine, verdict
from bench_server import AGENT_TOKEN, LINE_TOKEN, POLLER, Server, ask

RATIO_TARGET = 1.2
TOTAL_TARGET_MB = 270.0
AT = 10_000  # the total target is for this many polls

BARE = textwrap.dedent("""
    import asyncio, hmac, socket, sys
    from aiohttp import web
    TOKEN = ("Bearer " + sys.argv[1]).encode()
    parked = 0

    async def poll(request):
        global parked
        if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), TOKEN):
            return web.json_response({"error": "unauthorized"}, status=401)
        wait = float(request.query.get("wait", "0"))
        future = asyncio.get_running_loop().create_future()
        timer = asyncio.get_running_loop().call_later(wait, future.set_result, None)
        parked += 1
        try:
            await future
        finally:
            parked -= 1
            timer.cancel()
        return web.json_response({"id": request.match_info["id"], "status": "pending"})

    async def count(request):
        return web.json_response({"parked": parked})

    app = web.Application()
    app.router.add_get("/v1/tool-calls/{id}", poll)
    app.router.add_get("/parked", count)
    app.router.add_get("/readyz", count)
    sock = socket.create_server(("127.0.0.1", 0))  # port 0: nobody else's
    print(sock.getsockname()[1], flush=True)
    web.run_app(app, sock=sock, print=None, access_log=None)
""")


SETTLE = [1.0]
"""Seconds to let allocation settle before reading RSS (``--quick``: a tenth)."""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def tapgate_parked(session: aiohttp.ClientSession, url: str) -> int:
    async with session.get(url + "/metrics") as r:
        text = await r.text()
    line = next(x for x in text.splitlines() if x.startswith("tapgate_parked_waiters "))
    return int(float(line.split()[1]))


async def bare_parked(session: aiohttp.ClientSession, url: str) -> int:
    async with session.get(url + "/parked") as r:
        return int((await r.json())["parked"])


async def park(
    tmp: Path,
    url: str,
    pid: int,
    ids: list[str],
    parked: Callable[[aiohttp.ClientSession, str], Awaitable[int]],
) -> tuple[float, float, float]:
    """MB idle, with the first half of ``ids`` parked, and with all of them parked.

    Two pollers, one per half: the second half's growth is what one more
    parked poll costs once the server has held that many (its caches and
    allocator warm), the whole growth what the first ``len(ids)`` cost.
    """
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    pollers: list[subprocess.Popen[bytes]] = []
    async with aiohttp.ClientSession() as session:
        for rid in (ids * 200)[:200]:
            async with session.get(f"{url}/v1/tool-calls/{rid}", headers=headers) as r:
                assert r.status == 200, await r.text()
        await asyncio.sleep(SETTLE[0] / 2)
        readings = [rss_mb(pid)]
        (tmp / "poller.py").write_text(POLLER)
        half = len(ids) // 2
        try:
            for part, (lo, hi) in enumerate([(0, half), (half, len(ids))]):
                (tmp / f"ids{part}.json").write_text(json.dumps(ids[lo:hi]))
                argv = [sys.executable, str(tmp / "poller.py"), url, AGENT_TOKEN]
                argv.append(str(tmp / f"ids{part}.json"))
                pollers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))
                deadline = time.monotonic() + 120
                while (held := await parked(session, url)) < hi:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"only {held} of {hi} polls were parked")
                    await asyncio.sleep(0.1)
                await asyncio.sleep(SETTLE[0])  # let allocation settle
                readings.append(rss_mb(pid))
            return readings[0], readings[1], readings[2]
        finally:
            for poller in pollers:
                poller.kill()
                await asyncio.to_thread(poller.wait)


async def bare_round(tmp: Path, ids: list[str]) -> tuple[float, float, float]:
    (tmp / "bare_poll.py").write_text(BARE)
    argv = [sys.executable, str(tmp / "bare_poll.py"), AGENT_TOKEN]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(await asyncio.to_thread(proc.stdout.readline))
        return await park(tmp, f"http://127.0.0.1:{port}", proc.pid, ids, bare_parked)
    finally:
        proc.kill()  # its parked handlers outlive their clients (aiohttp does not cancel them)
        await asyncio.to_thread(proc.wait)
        if proc.stdout:
            proc.stdout.close()


async def tapgate_round(tmp: Path, line: FakeLine, ids: list[str]) -> tuple[float, float, float]:
    async with Server(tmp, line.url) as server:
        assert server.proc is not None
        return await park(tmp, server.url, server.proc.pid, ids, tapgate_parked)


async def prepare(tmp: Path, line: FakeLine, n: int) -> list[str]:
    """Ask ``n`` calls once (their LINE pushes delivered); every round polls these."""
    async with Server(tmp, line.url) as server:
        connector = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(connector=connector) as agent:
            ids = list(await asyncio.gather(*(ask(agent, server.url, i) for i in range(n))))
        while len(line.pushes) < n:
            await asyncio.sleep(0.05)
    return ids


def report(rounds: list[dict[str, tuple[float, float, float]]], n: int) -> bool:
    per: dict[str, list[float]] = {"tapgate": [], "bare": []}
    marginal: dict[str, list[float]] = {"tapgate": [], "bare": []}
    totals = []
    for i, results in enumerate(rounds, 1):
        print(f"round {i}:")
        for name, (idle, middle, peak) in results.items():
            per[name].append((peak - idle) * 1024 / n)
            marginal[name].append((peak - middle) * 1024 / (n - n // 2))
            print(
                f"  {name:8s} idle {idle:6.1f} MB, {n // 2} parked {middle:6.1f} MB, "
                f"{n} parked {peak:6.1f} MB: {per[name][-1]:5.2f} KB/poll "
                f"(the second half {marginal[name][-1]:5.2f})"
            )
        totals.append(results["tapgate"][0] + per["tapgate"][-1] * AT / 1024)
    ratios = [t / b for t, b in zip(per["tapgate"], per["bare"], strict=True)]
    second = [t / b for t, b in zip(marginal["tapgate"], marginal["bare"], strict=True)]
    ratio, total = statistics.median(ratios), statistics.median(totals)
    print("\nmedian over the rounds (spread = lowest - highest round):")
    for name, values in per.items():
        print(
            f"  {name:8s} {statistics.median(values):5.2f} KB per poll "
            f"({min(values):.2f} - {max(values):.2f}); the second half "
            f"{statistics.median(marginal[name]):5.2f} KB"
        )
    print(
        f"  tapgate / bare {ratio:.2f} ({min(ratios):.2f} - {max(ratios):.2f}); "
        f"target <= {RATIO_TARGET}: {'met' if ratio <= RATIO_TARGET else 'MISSED'}; "
        f"the second half {statistics.median(second):.2f} ({min(second):.2f} - {max(second):.2f})"
    )
    print(
        f"  tapgate with {AT} parked: {total:.0f} MB ({min(totals):.0f} - {max(totals):.0f}); "
        f"target < {TOTAL_TARGET_MB:g} MB: {'met' if total < TOTAL_TARGET_MB else 'MISSED'}"
    )
    return ratio <= RATIO_TARGET and total < TOTAL_TARGET_MB


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=AT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.polls, args.rounds = 200, 1
        SETTLE[0] = 0.1
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    print(f"bench_long_polls: {machine()}; {args.polls} polls x {args.rounds} rounds")
    print(f"load average at the start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        async with FakeLine(access_token=LINE_TOKEN) as line:
            ids = await prepare(tmp, line, args.polls)
            rounds = []
            for i in range(args.rounds):
                results: dict[str, tuple[float, float, float]] = {}
                for name in ("tapgate", "bare") if i % 2 == 0 else ("bare", "tapgate"):
                    if name == "tapgate":
                        results[name] = await tapgate_round(tmp, line, ids)
                    else:
                        results[name] = await bare_round(tmp, ids)
                rounds.append({name: results[name] for name in ("tapgate", "bare")})
    print(f"load average at the end: {os.getloadavg()}")
    return verdict(report(rounds, args.polls), quick=args.quick)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
