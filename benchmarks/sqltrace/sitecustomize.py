"""Time every SQLite statement of a process, by statement shape: where a tap's database time goes.

Put this directory first on ``PYTHONPATH`` and name an output file:

    PYTHONPATH=benchmarks/sqltrace SQLTRACE_OUT=/tmp/sqltrace \\
        .venv/bin/python benchmarks/bench_server.py --taps-only 1 --taps 2000

Every process that starts with it (the benchmark's ``tapgate serve`` too)
wraps ``sqlite3.connect`` with a trace callback and writes
``SQLTRACE_OUT.<pid>`` every two seconds: per statement shape (literals
folded), the total, the count and the mean. A statement's time is from its
start to the next statement's start on the same thread, so it includes the
Python between them, and a COMMIT's includes the idle time before the next
transaction; a statement with triggers is counted once per trigger
subprogram. Counting starts at the first ``INSERT INTO webhook_inbox`` (the
first tap), so the set-up's asks are left out. Tracing slows the server:
read the shares, not the rates.
"""

from __future__ import annotations

import collections
import os
import re
import sqlite3
import sqlite3.dbapi2
import threading
import time
from typing import Any

_connect = sqlite3.connect
_totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
_last: dict[int, tuple[str, float]] = {}
_lock = threading.Lock()
_counting = threading.Event()


def _shape(sql: str) -> str:
    sql = re.sub(r"'[^']*'", "?", sql)
    sql = re.sub(r"\b\d+(\.\d+)?\b", "N", sql)
    return " ".join(sql.split())[:160]


def _traced(sql: str) -> None:
    now = time.perf_counter()
    shape = _shape(sql)
    if not _counting.is_set() and shape.startswith("INSERT INTO webhook_inbox"):
        _counting.set()
        with _lock:
            _totals.clear()
    previous = _last.get(threading.get_ident())
    if previous is not None:
        with _lock:
            total = _totals[previous[0]]
            total[0] += 1
            total[1] += now - previous[1]
    _last[threading.get_ident()] = (shape, now)


def _traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    connection: sqlite3.Connection = _connect(*args, **kwargs)
    connection.set_trace_callback(_traced)
    return connection


def _write() -> None:
    out = os.environ.get("SQLTRACE_OUT")
    while out:
        time.sleep(2)
        with _lock:
            rows = sorted(_totals.items(), key=lambda item: -item[1][1])
        with open(f"{out}.{os.getpid()}", "w") as file:
            for shape, (count, seconds) in rows:
                mean = seconds / count * 1e6
                file.write(f"{seconds * 1e3:9.1f} ms {int(count):7d} {mean:8.1f} us  {shape}\n")


sqlite3.connect = _traced_connect  # type: ignore[assignment]
sqlite3.dbapi2.connect = _traced_connect  # type: ignore[assignment]  # what SQLAlchemy's pysqlite dialect calls
threading.Thread(target=_write, daemon=True).start()
