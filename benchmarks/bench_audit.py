"""The cost of one audit row's append, chain included, without the commit.

Run: ``python benchmarks/bench_audit.py [--quick]``. Appends 2,000 rows inside one
transaction on a SQLite file, five rounds, and prints the median per row in
µs. The hash chain (migration 0003) adds a trigger ``UPDATE`` and a SHA-256
in Python per row; to see what it costs, alternate this script with an
older build (``PYTHONPATH=<older checkout>/src``), as docs/benchmarks.md does.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime

from sqlalchemy import Connection

from _util import QUICK_HELP
from tapgate.store import Store, audit


async def main(quick: bool) -> None:
    rows, repeat = (200, 2) if quick else (2000, 5)
    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(f"sqlite:///{tmp}/bench.db") as store:
            now = datetime.now(UTC)

            def append(conn: Connection) -> None:
                for i in range(rows):
                    detail = {"reason": "ok", "scope": None, "i": i}
                    audit.write(conn, now, "note", "r" * 22, "alice", detail)

            rounds = []
            for _ in range(repeat):
                start = time.perf_counter()
                await store.run(append)
                rounds.append((time.perf_counter() - start) / rows * 1e6)
            print(f"audit append, per row in one transaction: {statistics.median(rounds):.1f} us")


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    asyncio.run(main(cli.parse_args().quick))
