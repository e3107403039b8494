"""Two replicas on one PostgreSQL: cross-replica tap-to-resume, and cycles/s beside SQLite.

Run: ``python benchmarks/bench_replicas.py [--quick]`` (starts a throwaway
PostgreSQL with ``scripts/pg-test-server``, which needs its server binaries;
with ``$TAPGATE_TEST_PG_URL`` set, uses that server instead, in databases of
its own).

1. Two ``tapgate serve`` processes share one database. An agent long-polls
   replica A; the signed LINE tap is POSTed to replica B; we time until A's
   long-poll answers. Target p99 <= 25 ms.
2. ask -> resolve cycles per second in one process (32 agents at once) on
   PostgreSQL, with the same figure on SQLite measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import aiohttp

import bench_gate
import bench_server
from _util import QUICK_HELP, machine, pct, verdict
from resume_floor import timed_tap

ROOT = Path(__file__).resolve().parent.parent


class PostgreSQL:
    """A throwaway server (``scripts/pg-test-server``), or the one at ``$TAPGATE_TEST_PG_URL``."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tapgate-bench-pg-"))
        self.url = os.environ.get("TAPGATE_TEST_PG_URL", "")
        self.started = False

    def __enter__(self) -> PostgreSQL:
        if self.url:
            return self
        self.started = True
        from tests.fakes.taps import free_port  # importable: bench_server put the root on sys.path

        port = str(free_port())
        script = str(ROOT / "scripts" / "pg-test-server")
        self.url = subprocess.run(
            [script, "start", str(self.dir), port], check=True, capture_output=True, text=True
        ).stdout.strip()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.started:
            return
        subprocess.run(
            [str(ROOT / "scripts" / "pg-test-server"), "stop", str(self.dir)],
            check=False,
            capture_output=True,
        )

    async def database(self, name: str) -> str:
        """A new, empty database on the server (named apart: a shared server keeps old ones)."""
        import asyncpg

        name = f"{name}_{uuid.uuid4().hex[:8]}"
        conn = await asyncpg.connect(self.url.replace("postgresql://", "postgres://", 1))
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return self.url.rsplit("/", 1)[0] + "/" + name


class Replica(bench_server.Server):
    """``tapgate serve`` on a shared PostgreSQL database."""

    def __init__(self, tmp: Path, line_url: str, db_url: str) -> None:
        super().__init__(tmp, line_url)
        self.config.write_text(
            bench_server.config_text(tmp / "unused.db", line_url, self.port).replace(
                f'"sqlite:///{tmp / "unused.db"}"', f'"{db_url}"'
            )
        )


async def cross_replica(db_url: str, n: int = 300) -> list[float]:
    from tests.fakes import FakeLine  # importable once bench_server put the root on sys.path
    from tests.fakes.taps import signed_line_tap

    out = []
    with tempfile.TemporaryDirectory() as a_dir, tempfile.TemporaryDirectory() as b_dir:
        async with (
            FakeLine(access_token=bench_server.LINE_TOKEN) as line,
            Replica(Path(a_dir), line.url, db_url) as a,
            Replica(Path(b_dir), line.url, db_url) as b,
            aiohttp.ClientSession() as agent,
            aiohttp.ClientSession() as tapper,
        ):
            for i in range(n):
                pushed = len(line.pushes)
                rid = await bench_server.ask(agent, a.url, i)
                await bench_server.drained(line, pushed + 1)
                tap = signed_line_tap(bench_server.SECRET, bench_server.APPROVER, rid)
                auth = bench_server.AUTH
                out.append(await timed_tap(agent, a.url, tapper, b.url, rid, tap, auth))
    return out


async def main(pg: PostgreSQL, quick: bool) -> int:
    samples, cycles, repeat = (10, 64, 1) if quick else (300, 2000, 3)
    warmup = 16 if quick else 200
    latencies = await cross_replica(await pg.database("bench_replicas"), samples)
    pg_url = await pg.database("bench_cycles")
    pg_rate = await bench_gate.gate_cycles(pg_url, cycles, repeat, agents=32, warmup=warmup)
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_rate = await bench_gate.gate_cycles(
            f"sqlite:///{Path(tmp) / 'c.db'}", cycles, repeat, agents=32, warmup=warmup
        )
    print(f"# replicas ({machine()}, PostgreSQL on loopback, fsync off)")
    print(
        f"cross-replica tap-to-resume: p50 {pct(latencies, 50):.2f} ms, "
        f"p99 {pct(latencies, 99):.2f} ms (target p99 <= 25 ms)"
    )
    print(
        f"ask -> resolve cycles, 32 agents: PostgreSQL {pg_rate:.0f}/s; "
        f"SQLite {sqlite_rate:.0f}/s (same run)"
    )
    return verdict(pct(latencies, 99) <= 25, quick=quick)


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    quick = cli.parse_args().quick
    with PostgreSQL() as server:
        code = asyncio.run(main(server, quick))
    sys.exit(code)
