"""Gate overhead on an allowed call, and ask -> resolve cycles per second on SQLite.

Run: ``python benchmarks/bench_gate.py [--quick]``. Targets: ``gate.check`` on an allowed
call adds <= 20 us over awaiting a bare coroutine; >= 1,000 ask -> resolve
cycles per second in one process on a SQLite file. Baselines measured in the
same run: a bare ``await`` for the first, and for the second the same engine
doing one bare INSERT + one UPDATE per cycle (the least any durable gate must do).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, insert, update

from _util import QUICK_HELP, machine, verdict
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec
from tapgate.store import Store

SPEC = PolicySpec(
    tools=(ToolSpec(name="read_file", risk="read_only"),),
    rules=(Rule(tool="deploy", action="ask", source="policy.rules[0]"),),
)
DIRECTORY = Directory([Approver(name="alice", addresses=(("slack", "UA"),))], ("slack",))

_CALLS = itertools.count()
"""Numbers every asked call of the process: each cycle must ask a call never asked before.

An identical re-issue of a call already approved consumes that approval
instead of asking again (no request, so no ``request_id``), so a warm-up and
the runs after it must not repeat one another's arguments.
"""


def _new_call(agent: str) -> ToolCall:
    return ToolCall(tool="deploy", arguments={"build": next(_CALLS)}, agent=agent)


async def _noop() -> None:
    return None


async def overhead_us(gate: Gate, n: int = 20_000, repeat: int = 9) -> tuple[float, float]:
    call = ToolCall(tool="read_file", arguments={"path": "/etc/hosts"})
    gate_s, base_s = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            await gate.check(call)
        gate_s.append((time.perf_counter() - start) / n * 1e6)
        start = time.perf_counter()
        for _ in range(n):
            await _noop()
        base_s.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(gate_s), statistics.median(base_s)


async def cycles_per_second(gate: Gate, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        ticket = await gate.submit(_new_call("ci"))
        assert ticket.request_id is not None
        await gate.resolve(ticket.request_id, "approve", by="alice")
        decision = await gate.wait(ticket.request_id)
        assert decision is not None and decision.allowed
    return n / (time.perf_counter() - start)


async def bare_cycles_per_second(url: str, n: int) -> float:
    """The floor: one INSERT transaction and one UPDATE transaction per cycle, same runner."""
    store = await Store.open(url, migrate=False)
    meta = MetaData()
    t = Table("bench", meta, Column("id", Integer, primary_key=True), Column("s", String(16)))
    await store.run(meta.create_all)
    start = time.perf_counter()
    for i in range(n):

        def create(c: Connection, i: int = i) -> object:
            return c.execute(insert(t).values(id=i, s="pending"))

        def resolve(c: Connection, i: int = i) -> object:
            return c.execute(update(t).where(t.c.id == i).values(s="ok"))

        await store.run(create)
        await store.run(resolve)
    rate = n / (time.perf_counter() - start)
    await store.close()
    return rate


async def concurrent_cycles_per_second(gate: Gate, agents: int, each: int) -> float:
    """``agents`` agents asking at once, each running ``each`` cycles back to back."""

    async def agent(a: int) -> None:
        for _ in range(each):
            ticket = await gate.submit(_new_call(f"a{a}"))
            assert ticket.request_id is not None
            await gate.resolve(ticket.request_id, "approve", by="alice")
            decision = await gate.wait(ticket.request_id)
            assert decision is not None and decision.allowed

    start = time.perf_counter()
    await asyncio.gather(*(agent(a) for a in range(agents)))
    return agents * each / (time.perf_counter() - start)


async def gate_cycles(
    url: str, n: int, repeat: int, agents: int = 1, *, warmup: int = 200
) -> float:
    store = await Store.open(url)
    async with Gate(store=store, policy=Policy(SPEC), directory=DIRECTORY) as gate:
        await cycles_per_second(gate, min(n, warmup))
        if agents == 1:
            runs = [await cycles_per_second(gate, n) for _ in range(repeat)]
        else:
            runs = [
                await concurrent_cycles_per_second(gate, agents, n // agents) for _ in range(repeat)
            ]
    await store.close()
    return statistics.median(runs)


async def main(quick: bool) -> int:
    n, repeat, overhead_n = (50, 1, 500) if quick else (1000, 3, 20_000)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = await Store.open(url)
        async with Gate(store=store, policy=Policy(SPEC), directory=DIRECTORY) as gate:
            ours, bare = await overhead_us(gate, overhead_n, 3 if quick else 9)
        await store.close()
        rate = await gate_cycles(url, n, repeat, warmup=n // 5)
        c_url = f"sqlite:///{Path(tmp) / 'c.db'}"
        concurrent = await gate_cycles(c_url, 2 * n, repeat, agents=32, warmup=n // 5)
        aio_url = f"sqlite+aiosqlite:///{Path(tmp) / 'aio.db'}"
        aiosqlite_rate = await gate_cycles(aio_url, n // 5, 1, warmup=n // 5)
        floor = await bare_cycles_per_second(f"sqlite:///{Path(tmp) / 'bare.db'}", 2 * n)
    overhead = ours - bare
    print(f"# gate ({machine()}, SQLite file in a temp dir)")
    print(
        f"gate.check allowed call: {ours:.2f} us; bare await: {bare:.2f} us; "
        f"overhead {overhead:.2f} us (target <= 20)"
    )
    print(f"ask -> resolve cycles, 32 agents at once: {concurrent:.0f}/s (target >= 1000/s)")
    print(f"ask -> resolve cycles, one agent back to back: {rate:.0f}/s")
    print(f"  baseline, same gate over sqlite+aiosqlite: {aiosqlite_rate:.0f}/s")
    print(f"  baseline, bare INSERT tx + UPDATE tx on the same runner: {floor:.0f}/s")
    return verdict(overhead <= 20 and concurrent >= 1000, quick=quick)


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    sys.exit(asyncio.run(main(cli.parse_args().quick)))
