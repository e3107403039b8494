"""Time each step of a LINE tap inside ``tapgate serve``: where tap-to-resume goes.

Put this directory first on ``PYTHONPATH`` and name an output file:

    PYTHONPATH=benchmarks/tapphases TAPPHASES_OUT=/tmp/phases \\
        .venv/bin/python benchmarks/bench_server.py --polls 200 --resume 300 --resume-runs 1

Every process that starts with it (the benchmark's ``tapgate serve`` too)
wraps the steps of a tap and writes ``TAPPHASES_OUT.<pid>`` every two
seconds: for each step, p50 / p99 / mean of its milliseconds over the taps
seen, one line each. The steps, in the order a tap takes them, each from the
end of the one before (``time.perf_counter``, the same clock everywhere):

- ``record``: the webhook handler's start (signature, parsing) to the
  inbox row committed (the durable record before the 200);
- ``answered``: to the handler's return (the 200 goes out right after);
- ``to_decide``: to the decision's transaction being queued (the apply task
  starting, a pending typed reason looked up: one more store round trip);
- ``decided``: to the decision's transaction committed and back on the loop;
- ``woken``: to the parked long-poll's future being set (``Waiters.wake``);
- ``consumed``: to the long-poll having consumed the approval (a fresh
  approval told to its agent is used up, in a transaction of its own);
- ``responded``: to the long-poll handler's return (its JSON built).

``total`` is handler start to long-poll handler return. It wraps private
functions on purpose, like ``sqltrace``: a tool for reading, not an API.
"""

from __future__ import annotations

import os
import re
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

STEPS = ("record", "answered", "to_decide", "decided", "woken", "consumed", "responded")
_marks: dict[str, dict[str, float]] = {}
_current: list[str] = []  # the request id the last webhook call named (taps come one at a time)
_lock = threading.Lock()
_REQUEST = re.compile(rb"r=([A-Za-z0-9_-]+)")


def _mark(request_id: str | None, step: str) -> None:
    if request_id is not None:
        with _lock:
            _marks.setdefault(request_id, {})[step] = time.perf_counter()


def _wrap(
    owner: Any, name: str, before: str | None, after: str | None, rid: Callable[..., str | None]
) -> None:
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        request_id = rid(*args, **kwargs)
        if before:
            _mark(request_id, before)
        result = await original(*args, **kwargs)
        if after:
            _mark(request_id, after)
        return result

    setattr(owner, name, wrapped)


def _install() -> None:
    from tapgate.channels.line.webhook import LineWebhook
    from tapgate.decisions.webhook_inbox import Inbox
    from tapgate.gate.waiters import Waiters
    from tapgate.server.api import agent
    from tapgate.store.approvals import Approvals

    def from_body(_self: Any, _headers: Any, body: bytes) -> str | None:
        found = _REQUEST.search(body)
        _current[:] = [found.group(1).decode()] if found else []
        return _current[0] if _current else None

    def current(*_args: Any, **_kwargs: Any) -> str | None:
        return _current[0] if _current else None

    _wrap(LineWebhook, "handle", "start", "answered", from_body)
    _wrap(Inbox, "record", None, "record", current)
    _wrap(Approvals, "approve", "to_decide", "decided", lambda _s, change: change.request_id)
    _wrap(agent, "told", None, "consumed", lambda _r, request: request.id)
    _wrap(agent, "get_tool_call", None, "responded", lambda r: r.match_info["id"])
    wake = Waiters.wake

    def woken(self: Waiters, request: Any) -> int:
        _mark(request.id, "woken")
        return wake(self, request)

    Waiters.wake = woken  # type: ignore[method-assign]


def _write(out: str) -> None:
    while True:
        time.sleep(2)
        with _lock:
            taps = [m for m in _marks.values() if "start" in m and "responded" in m]
        lines = []
        for index, step in enumerate(("total", *STEPS)):
            if step == "total":
                spans = [m["responded"] - m["start"] for m in taps]
            else:
                before = ("start", *STEPS)[index - 1]
                spans = [m[step] - m[before] for m in taps if step in m and before in m]
            if len(spans) >= 2:
                ms = sorted(s * 1000 for s in spans)
                p99 = statistics.quantiles(ms, n=100, method="inclusive")[98]
                mean = statistics.fmean(ms)
                lines.append(
                    f"{step:>10}: p50 {statistics.median(ms):7.3f} ms  p99 {p99:7.3f} ms  "
                    f"mean {mean:7.3f} ms  ({len(ms)} taps)\n"
                )
        with open(f"{out}.{os.getpid()}", "w") as file:
            file.writelines(lines)


if os.environ.get("TAPPHASES_OUT"):
    _install()
    threading.Thread(target=_write, args=(os.environ["TAPPHASES_OUT"],), daemon=True).start()
