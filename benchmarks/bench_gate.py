"""Gate overhead on an allowed call, and ask -> resolve cycles per second on SQLite.

Run: ``python benchmarks/bench_gate.py``. Targets: ``gate.check`` on an allowed
call adds <= 20 us over awaiting a bare coroutine; >= 1,000 ask -> resolve
cycles per second in one process on a SQLite file. Baselines measured in the
same run: a bare ``await`` for the first, and for the second the same engine
doing one bare INSERT + one UPDATE per cycle (the least any durable gate must do).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, insert, update

from _util import machine
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
    for i in range(n):
        ticket = await gate.submit(ToolCall(tool="deploy", arguments={"build": i}, agent="ci"))
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
        for i in range(each):
            call = ToolCall(tool="deploy", arguments={"build": i, "agent": a}, agent=f"a{a}")
            ticket = await gate.submit(call)
            assert ticket.request_id is not None
            await gate.resolve(ticket.request_id, "approve", by="alice")
            decision = await gate.wait(ticket.request_id)
            assert decision is not None and decision.allowed

    start = time.perf_counter()
    await asyncio.gather(*(agent(a) for a in range(agents)))
    return agents * each / (time.perf_counter() - start)


async def gate_cycles(url: str, n: int, repeat: int, agents: int = 1) -> float:
    store = await Store.open(url)
    async with Gate(store=store, policy=Policy(SPEC), directory=DIRECTORY) as gate:
        await cycles_per_second(gate, min(n, 200))  # warm-up
        if agents == 1:
            runs = [await cycles_per_second(gate, n) for _ in range(repeat)]
        else:
            runs = [
                await concurrent_cycles_per_second(gate, agents, n // agents) for _ in range(repeat)
            ]
    await store.close()
    return statistics.median(runs)


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = await Store.open(url)
        async with Gate(store=store, policy=Policy(SPEC), directory=DIRECTORY) as gate:
            ours, bare = await overhead_us(gate)
        await store.close()
        rate = await gate_cycles(url, 1000, 3)
        concurrent = await gate_cycles(f"sqlite:///{Path(tmp) / 'c.db'}", 2000, 3, agents=32)
        aiosqlite_rate = await gate_cycles(f"sqlite+aiosqlite:///{Path(tmp) / 'aio.db'}", 200, 1)
        floor = await bare_cycles_per_second(f"sqlite:///{Path(tmp) / 'bare.db'}", 2000)
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
    ok = overhead <= 20 and concurrent >= 1000
    print("targets:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
