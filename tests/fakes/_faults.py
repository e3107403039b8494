"""Scripted faults: what a fake platform does to the next calls of one endpoint.

A test says *what goes wrong* (``Fault.status(503)``, ``Fault.drop()``...) and
the fake applies each fault to exactly one call, in FIFO order per endpoint;
unscripted calls behave normally. Faults are plain frozen records so a test
can also read back which fault hit which recorded request.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

FaultKind = Literal["status", "timeout", "drop", "drop_after_success"]


@dataclass(frozen=True, kw_only=True)
class Fault:
    """One scripted misbehaviour, applied to a single call.

    Kinds:

    - ``status``: answer ``code`` with ``body`` (JSON when a dict/list, raw text
      when a str; ``None`` means the platform's usual body for that code) and
      ``headers``. The call is *not* performed.
    - ``timeout``: hang ``seconds`` before answering normally. With a client
      timeout shorter than ``seconds`` the client gives up and the call is not
      performed (the fake notices the disconnect). With ``deliver=True`` the
      call is performed *first*, then the fake hangs: the client times out
      although the message went out (the classic ambiguous failure).
    - ``drop``: close the connection without any response; not performed.
      aiohttp clients see ``aiohttp.ServerDisconnectedError``.
    - ``drop_after_success``: perform the call, then close the connection: the
      client sees ``ServerDisconnectedError`` although the message was delivered.
    """

    kind: FaultKind
    code: int = 0
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    deliver: bool = False

    @classmethod
    def status(
        cls,
        code: int,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """Answer ``code`` without performing the call (429, 500, 503, 400...)."""
        return cls(kind="status", code=code, body=body, headers=dict(headers or {}))

    @classmethod
    def timeout(cls, seconds: float, *, deliver: bool = False) -> Fault:
        """Hang for ``seconds``; ``deliver=True`` performs the call before hanging."""
        return cls(kind="timeout", seconds=seconds, deliver=deliver)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without answering and without performing the call."""
        return cls(kind="drop")

    @classmethod
    def drop_after_success(cls) -> Fault:
        """Perform the call, then close the connection without answering."""
        return cls(kind="drop_after_success")

    # Platform-flavoured shortcuts: the bodies the real APIs send.

    @classmethod
    def line_rate_limited(cls) -> Fault:
        """LINE's rate limit: 429, no ``Retry-After`` (LINE never sends one)."""
        return cls.status(429, {"message": "Too Many Requests"})

    @classmethod
    def line_monthly_limit(cls) -> Fault:
        """LINE's monthly quota: also 429, but retrying can never succeed."""
        return cls.status(429, {"message": "You have reached your monthly limit."})

    @classmethod
    def slack_ratelimited(cls, retry_after: int | None = 1) -> Fault:
        """Slack's rate limit: 429 ``ratelimited``, ``Retry-After`` in seconds."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls.status(429, {"ok": False, "error": "ratelimited"}, headers)

    @classmethod
    def slack_error(cls, error: str) -> Fault:
        """A Slack API error: HTTP 200 with ``{"ok": false, "error": error}``."""
        return cls.status(200, {"ok": False, "error": error})


class FaultScript:
    """FIFO queues of faults, one per endpoint name.

    Endpoint names are checked so a typo in a test fails loudly instead of
    silently scripting nothing.
    """

    def __init__(self, endpoints: Iterable[str]) -> None:
        self._queues: dict[str, deque[Fault]] = {name: deque() for name in endpoints}

    def add(self, endpoint: str, faults: Iterable[Fault]) -> None:
        """Enqueue ``faults`` for the next calls of ``endpoint``."""
        self._queue(endpoint).extend(faults)

    def pop(self, endpoint: str) -> Fault | None:
        """The fault for this call, or ``None`` to behave normally."""
        queue = self._queues.get(endpoint)
        return queue.popleft() if queue else None

    def pending(self, endpoint: str) -> tuple[Fault, ...]:
        """Faults still waiting for ``endpoint``."""
        return tuple(self._queue(endpoint))

    def clear(self) -> None:
        """Forget every fault not yet applied."""
        for queue in self._queues.values():
            queue.clear()

    def _queue(self, endpoint: str) -> deque[Fault]:
        try:
            return self._queues[endpoint]
        except KeyError:
            known = ", ".join(sorted(self._queues))
            raise ValueError(f"unknown endpoint {endpoint!r}; known: {known}") from None
