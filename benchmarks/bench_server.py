"""The webhook server under load: tap-to-resume, signed taps per second, 10,000 long-polls.

Run: ``python benchmarks/bench_server.py [--polls 10000] [--quick]``, or only the taps
against their floor: ``--taps-only ROUNDS [--tap-log off]`` (rounds rotate
which server goes first; each prints taps / floor and the servers' CPU per
tap). That mode also times the servers between the floor and tapgate
(``tap_floors``: the floor plus one durable INSERT, through tapgate's store
runner and through ``sqlite3``; the floor plus tapgate's core for a tap), to
say where the gap between the two goes. ``TAPGATE_BENCH_PROFILE=<dir>``
records the tapgate server (and, with ``--taps-only``, each one-handler
server) with py-spy during the taps, if ``py-spy`` is installed next to the
interpreter. The tapgate server runs as its own process (``tapgate serve``)
on SQLite; this process plays the agents, LINE (signed webhook taps) and the fake LINE API.

1. tap-to-resume: an agent long-polls ``GET /v1/tool-calls/{id}?wait=30``; we
   POST a signed LINE postback tap and time until the long-poll answers,
   sample by sample beside the floor (``resume_floor``: a server that only
   verifies the signature, wakes the parked long-poll and replies),
   ``--resume-runs`` runs of ``--resume`` samples each. Targets: p99 <= 10 ms,
   p99 <= 4x the floor's, p50 <= 2x the floor's.
2. signed taps resolved per second, 16 concurrent clients, each tap deciding a
   different pending request; baseline in the same run: a bare aiohttp server
   process whose handler only verifies the HMAC. Target >= 0.4 of the bare figure.
   Also measured: the floor, a handler that verifies the HMAC and sends the
   one LINE reply each tap must send (to the same fake LINE API process), and
   does nothing more. Target: taps >= 0.6 of the floor.
3. 10,000 concurrent agent long-polls held by one server: its resident memory
   (VmRSS) with all of them parked, against the same server idle. Target <= 300 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from tests.fakes import FakeLine
from tests.fakes.taps import free_port, signed_line_tap

import resume_floor
from _util import QUICK_HELP, machine, verdict
from tap_floors import BARE, CORE, DURABLE, FLOOR

SECRET = "bench-channel-secret"
LINE_TOKEN = "bench-line-token"
AGENT_TOKEN = "bench-agent-token-0123456789"
APPROVER = "U" + "b" * 32


TAP_LOG: list[str] = []
"""``--tap-log LEVEL``: the servers' ``channels.tap_log`` (none: the default, ``info``)."""


def config_text(db: Path, line_url: str, port: int) -> str:
    tap_log = f"tap_log: {TAP_LOG[0]}" if TAP_LOG else ""
    return textwrap.dedent(f"""
        server: {{host: 127.0.0.1, port: {port}, heartbeat_interval: 5}}
        store: {{url: "sqlite:///{db}"}}
        agents: [{{name: bench, token: "{AGENT_TOKEN}", max_pending: 0, asks_per_minute: 0}}]
        approvers: [{{name: alice, line: "{APPROVER}"}}]
        channels:
          {tap_log}
          line: {{channel_access_token: "{LINE_TOKEN}", channel_secret: "{SECRET}",
                  api_base_url: "{line_url}"}}
        policy:
          default_timeout: 1h
          rules: [{{tool: deploy, action: ask}}]
    """)


def start_spy(pid: int, name: str) -> subprocess.Popen[bytes] | None:
    """``TAPGATE_BENCH_PROFILE=<dir>``: record ``pid`` under py-spy into ``<dir>/<name>.txt``."""
    directory = os.environ.get("TAPGATE_BENCH_PROFILE")
    spy = Path(sys.executable).with_name("py-spy")
    if not directory or not spy.exists():
        return None
    out = Path(directory) / f"{name}.txt"
    spy_args = ["record", "--threads", "--idle", "-r", "200", "--format", "raw"]
    target = ["--pid", str(pid), "-o", str(out)]
    return subprocess.Popen([str(spy), *spy_args, *target], stdout=subprocess.DEVNULL)


async def stop_spy(spy: subprocess.Popen[bytes] | None) -> None:
    """Let py-spy write its profile (it does on SIGINT)."""
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        await asyncio.to_thread(spy.wait, 60)


class Server:
    """``tapgate serve`` in a child process."""

    def __init__(self, tmp: Path, line_url: str) -> None:
        self.port = free_port()
        self.config = tmp / "tapgate.yaml"
        self.config.write_text(config_text(tmp / "bench.db", line_url, self.port))
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.spy: subprocess.Popen[bytes] | None = None

    async def __aenter__(self) -> Server:
        exe = Path(sys.executable).with_name("tapgate")
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--config", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        async with aiohttp.ClientSession() as s:
            for _ in range(400):
                try:
                    async with s.get(self.url + "/readyz") as r:
                        if r.status == 200:
                            return self
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
        raise RuntimeError("tapgate serve did not become ready")

    def profile(self) -> None:
        """``TAPGATE_BENCH_PROFILE=<dir>``: record the server under py-spy (if installed)."""
        if self.proc is not None:
            self.spy = start_spy(self.proc.pid, f"serve-{self.port}")

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None
        await stop_spy(self.spy)
        self.proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(self.proc.wait, 30)

    def rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")


AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}


async def ask(session: aiohttp.ClientSession, url: str, n: int) -> str:
    async with session.post(
        url + "/v1/tool-calls", headers=AUTH, json={"tool": "deploy", "arguments": {"n": n}}
    ) as r:
        body = await r.json()
        assert body["decision"] == "pending", body
        return str(body["id"])


async def drained(line: FakeLine, pushes: int) -> None:
    """Wait until the approval messages are out: a tap comes after the push, not during it."""
    while len(line.pushes) < pushes:
        await asyncio.sleep(0.002)


async def tap_to_resume(
    server: Server, fake: FakeLine, tmp: Path, n: int, runs: int
) -> list[resume_floor.Resume]:
    """``runs`` runs of ``n`` tap-to-resume samples, each taken beside one of the floor's."""
    numbers = itertools.count()

    async with (
        aiohttp.ClientSession() as agent,
        aiohttp.ClientSession() as line,
        resume_floor.floor_server(tmp, free_port(), SECRET, fake.url, LINE_TOKEN) as floor_url,
    ):

        async def tapgate() -> float:
            pushed = len(fake.pushes)
            rid = await ask(agent, server.url, next(numbers))
            await drained(fake, pushed + 1)
            tap = signed_line_tap(SECRET, APPROVER, rid)
            return await resume_floor.timed_tap(agent, server.url, line, server.url, rid, tap, AUTH)

        async def floor() -> float:
            rid = await ask(agent, floor_url, 0)
            tap = signed_line_tap(SECRET, APPROVER, rid)
            return await resume_floor.timed_tap(agent, floor_url, line, floor_url, rid, tap, AUTH)

        return [await resume_floor.resume_against_floor(tapgate, floor, n) for _ in range(runs)]


CPU_US: dict[str, float] = {}
"""Server CPU per tap (µs, ``/proc/<pid>/stat``) of the last run of each kind, by URL."""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def taps_per_second(
    url: str, ids: list[str], clients: int = 16, pid: int | None = None
) -> float:
    """Signed taps per second; with ``pid``, that server's CPU per tap goes to ``CPU_US[url]``.

    CPU per tap moves far less with the machine's load than taps per second
    do (the other sessions' work takes cores, not CPU time from the server),
    so it is the steadier of the two comparisons on a shared machine.
    """
    queue = list(ids)
    cpu_before = cpu_seconds(pid) if pid is not None else 0.0

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            body, headers = signed_line_tap(SECRET, APPROVER, queue.pop())
            async with session.post(url + "/webhooks/line", data=body, headers=headers) as r:
                assert r.status == 200

    async with aiohttp.ClientSession() as session:
        start = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        rate = len(ids) / (time.perf_counter() - start)
    if pid is not None:
        CPU_US[url] = (cpu_seconds(pid) - cpu_before) / len(ids) * 1e6
    return rate


FAKE_LINE = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, sys.argv[1])
    from tests.fakes import FakeLine

    async def main():
        async with FakeLine(access_token=sys.argv[2]) as line:
            print(line.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())
""")


@contextlib.asynccontextmanager
async def fake_line_process(tmp: Path) -> AsyncIterator[str]:
    """The fake LINE API in a process of its own; yields its URL.

    The load generator must not also be the LINE API the server replies to,
    or the replies' cost would land in the client's process instead of
    competing for the cores as they do for the server under test.
    """
    (tmp / "fake_line.py").write_text(FAKE_LINE)
    root = str(Path(__file__).resolve().parent.parent)
    fake = subprocess.Popen(
        [sys.executable, str(tmp / "fake_line.py"), root, LINE_TOKEN],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.stdout is not None
        yield (await asyncio.to_thread(fake.stdout.readline)).strip()
    finally:
        fake.kill()
        await asyncio.to_thread(fake.wait)
        if fake.stdout:
            fake.stdout.close()


async def tapgate_taps_per_second(tmp: Path, line_url: str, n: int) -> float:
    """Taps against ``tapgate serve`` whose LINE replies go to the fake at ``line_url``."""
    tmp.mkdir()
    async with Server(tmp, line_url) as server:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
            ids = list(await asyncio.gather(*(ask(s, server.url, i) for i in range(n))))
            await _deliveries(s, server.url, n)
        server.profile()
        assert server.proc is not None
        rate = await taps_per_second(server.url, ids, pid=server.proc.pid)
        CPU_US["tapgate"] = CPU_US.pop(server.url)
        return rate


async def _delivered(session: aiohttp.ClientSession, url: str) -> float:
    """Approval messages the server reports delivered so far (its /metrics)."""
    async with session.get(url + "/metrics") as r:
        text = await r.text()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("tapgate_deliveries_total")
    )


async def _deliveries(session: aiohttp.ClientSession, url: str, n: float) -> None:
    """Wait until the server reports ``n`` approval messages delivered in all."""
    for _ in range(6000):
        if await _delivered(session, url) >= n:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the approval messages were never all delivered")


async def handler_taps_per_second(tmp: Path, name: str, script: str, n: int, *args: str) -> float:
    """Signed taps per second against a one-handler aiohttp server in its own process."""
    port = free_port()
    path = tmp / f"{name}.py"
    path.write_text(script)
    proc = subprocess.Popen([sys.executable, str(path), str(port), SECRET, *args])
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as s:
            for _ in range(1200):  # CORE creates its pending requests first
                try:
                    async with s.post(url + "/webhooks/line", data=b"x"):
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.05)
        ids = [uuid.uuid4().hex[:22] for _ in range(n)]
        spy = start_spy(proc.pid, f"{name}-{port}")
        try:
            rate = await taps_per_second(url, ids, pid=proc.pid)
        finally:
            await stop_spy(spy)
        CPU_US[name] = CPU_US.pop(url)
        return rate
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)


POLLER = textwrap.dedent("""
    import asyncio, json, sys, aiohttp
    url, token, ids_file = sys.argv[1], sys.argv[2], sys.argv[3]
    ids = json.load(open(ids_file))

    async def main():
        headers = {"Authorization": f"Bearer {token}"}
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as s:
            async def poll(rid):
                target = f"{url}/v1/tool-calls/{rid}?wait=120"
                for _ in range(20):  # 10,000 connects at once: a refused one retries, as agents do
                    try:
                        async with s.get(target, headers=headers) as r:
                            await r.read()
                            return
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.5)
            tasks = [asyncio.create_task(poll(rid)) for rid in ids]
            print("started", flush=True)
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
""")


async def long_polls(server: Server, tmp: Path, n: int) -> tuple[float, float]:
    """RSS with ``n`` long-polls parked, against the same server before they came.

    Both are read after the ``n`` asks' approval messages are all out, so the
    figure is the long-polls', not that of whatever share of 10,000 pushes
    happens to be in flight at the moment of reading.
    """
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as agent:
        before = await _delivered(agent, server.url)
        ids = await asyncio.gather(*(ask(agent, server.url, 100_000 + i) for i in range(n)))
        await _deliveries(agent, server.url, before + n)
    idle = server.rss_mb()
    (tmp / "ids.json").write_text(json.dumps(ids))
    (tmp / "poller.py").write_text(POLLER)
    poller = subprocess.Popen(
        [sys.executable, str(tmp / "poller.py"), server.url, AGENT_TOKEN, str(tmp / "ids.json")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        held = await _count_connections(server, n)
        peak = server.rss_mb()
        assert held >= n, f"only {held} long-polls were held"
        return idle, peak
    finally:
        poller.kill()
        await asyncio.to_thread(poller.wait)
        if poller.stdout:
            poller.stdout.close()


async def _count_connections(server: Server, n: int) -> int:
    """Wait until the server reports ``n`` parked waiters on /metrics (or 90 s)."""
    held = 0
    async with aiohttp.ClientSession() as session:
        for _ in range(900):
            async with session.get(server.url + "/metrics") as r:
                text = await r.text()
            held = int(
                next(
                    float(line.split()[1])
                    for line in text.splitlines()
                    if line.startswith("tapgate_parked_waiters ")
                )
            )
            if held >= n:
                await asyncio.sleep(1.0)  # let allocation settle
                return held
            await asyncio.sleep(0.1)
    return held


FLOORS = {
    "durable_sqlalchemy": "floor + one durable INSERT (tapgate's store runner)",
    "durable_sqlite3": "floor + one durable INSERT (sqlite3 in the event loop)",
    "core": "floor + tapgate's core for a tap (inbox record, core.taps.tap)",
}
"""The servers between the floor and tapgate (``tap_floors``), by name, as reported."""


async def taps_against_floor(rounds: int, n: int) -> int:
    """Only the tap figures: ``rounds`` interleaved rounds of tapgate, the floor and ``FLOORS``.

    Which server goes first rotates round by round, so a machine that
    gets busier or quieter during the run weighs on both alike; each round's
    ratio is taken within the round. ``TAPGATE_BENCH_PROFILE=<dir>`` records
    each tapgate server under py-spy (if installed) into that directory.
    """
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    others: dict[str, list[float]] = {name: [] for name in FLOORS}
    print(f"# signed taps against the floor ({machine()}, load average {_load()})")
    servers = ["tapgate", "floor", *others]
    for number in range(1, rounds + 1):
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            async with fake_line_process(tmp) as line_url:
                figures: dict[str, float] = {}
                shift = (number - 1) % len(servers)
                order = servers[shift:] + servers[:shift]
                for which in order:
                    if which == "tapgate":
                        figures[which] = await tapgate_taps_per_second(tmp / "taps", line_url, n)
                    elif which == "floor":
                        figures[which] = await handler_taps_per_second(
                            tmp, "floor", FLOOR, n, line_url, LINE_TOKEN
                        )
                    elif which == "core":
                        db, count = str(tmp / "core.db"), str(n + 16)
                        figures[which] = await handler_taps_per_second(
                            tmp, which, CORE, n, line_url, LINE_TOKEN, db, count, APPROVER
                        )
                    else:
                        # (named apart: a script called sqlalchemy.py would shadow the package)
                        kind, db = which.removeprefix("durable_"), str(tmp / f"{which}.db")
                        figures[which] = await handler_taps_per_second(
                            tmp, which, DURABLE, n, line_url, LINE_TOKEN, kind, db
                        )
        ratio = figures["tapgate"] / figures["floor"]
        ratios.append(ratio)
        cpu = CPU_US["floor"] / CPU_US["tapgate"]
        cpu_ratios.append(cpu)
        for kind, found in others.items():
            found.append(figures[kind] / figures["floor"])
        print(
            f"round {number} ({' then '.join(order)}): tapgate {figures['tapgate']:.0f}/s, "
            f"floor {figures['floor']:.0f}/s, ratio {ratio:.2f}; server CPU per tap "
            f"{CPU_US['tapgate']:.0f} us against {CPU_US['floor']:.0f} us, ratio {cpu:.2f}; "
            + "; ".join(
                f"{FLOORS[kind]} {figures[kind]:.0f}/s, "
                f"{figures[kind] / figures['floor']:.2f} of the floor, {CPU_US[kind]:.0f} us/tap"
                for kind in others
            )
            + f" (load average {_load()})",
            flush=True,
        )
    print(
        f"taps / floor: median {statistics.median(ratios):.2f} "
        f"(spread {min(ratios):.2f} - {max(ratios):.2f}; target >= 0.6); "
        f"floor CPU / tapgate CPU per tap: median {statistics.median(cpu_ratios):.2f} "
        f"(spread {min(cpu_ratios):.2f} - {max(cpu_ratios):.2f})"
    )
    for kind, found in others.items():
        print(
            f"{FLOORS[kind]} / floor: "
            f"median {statistics.median(found):.2f} "
            f"(spread {min(found):.2f} - {max(found):.2f})"
        )
    return 0 if statistics.median(ratios) >= 0.6 else 1


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=10_000)
    parser.add_argument("--taps", type=int, default=2000)
    parser.add_argument(
        "--taps-only",
        type=int,
        metavar="ROUNDS",
        default=0,
        help="only signed taps against the floor, this many interleaved rounds",
    )
    parser.add_argument("--tap-log", choices=["off", "debug", "info", "warning"])
    parser.add_argument("--resume", type=int, default=300, help="tap-to-resume samples a run")
    parser.add_argument("--resume-runs", type=int, default=3, help="tap-to-resume runs")
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.polls, args.taps, args.resume, args.resume_runs = 200, 100, 10, 1
        args.taps_only = min(args.taps_only, 1)
    if args.tap_log:
        TAP_LOG.append(args.tap_log)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.taps_only:
        code = await taps_against_floor(args.taps_only, args.taps)
        return verdict(code == 0, quick=args.quick)
    print(f"# webhook server ({machine()}, tapgate serve on SQLite, clients in another process)")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        async with FakeLine(access_token=LINE_TOKEN) as line, Server(tmp, line.url) as server:
            runs = await tap_to_resume(server, line, tmp, args.resume, args.resume_runs)
            p99, p99_ratio, p50_ratio = resume_floor.report(runs)
            idle, peak = await long_polls(server, tmp, args.polls)
        async with fake_line_process(tmp) as line_url:
            taps = await tapgate_taps_per_second(tmp / "taps", line_url, args.taps)
            floor = await handler_taps_per_second(
                tmp, "floor", FLOOR, args.taps, line_url, LINE_TOKEN
            )
        bare = await handler_taps_per_second(tmp, "bare", BARE, args.taps)
    print(
        f"signed taps resolved: {taps:.0f}/s; bare aiohttp HMAC-only handler: {bare:.0f}/s; "
        f"ratio {taps / bare:.2f} (target >= 0.4)"
    )
    print(
        f"floor, a handler that only verifies the HMAC and sends the LINE reply: {floor:.0f}/s; "
        f"ratio {floor / bare:.2f} of bare; taps / floor {taps / floor:.2f} (target >= 0.6); "
        f"server CPU per tap {CPU_US['tapgate']:.0f} us, floor {CPU_US['floor']:.0f} us"
    )
    print(
        f"{args.polls} concurrent long-polls: server RSS {peak:.0f} MB "
        f"(idle, same server: {idle:.0f} MB) (target <= 300 MB)"
    )
    resumed = p99 <= 10 and p99_ratio <= 4 and p50_ratio <= 2
    return verdict(resumed and taps / bare >= 0.4 and peak <= 300, quick=args.quick)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
