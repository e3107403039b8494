"""When a plan tries a failed request again: how far apart, and for how long.

The pause before a retry is capped exponential backoff with jitter, with a
server's ``Retry-After`` as a floor under it (:func:`backoff`,
:func:`retry_after`). How long retrying goes on is the outage window, which
is what lets a waiting agent ride out a server restart.

A deploy or a crash takes the server away for seconds to a minute, while the
requests it holds survive in its database and stay decidable. A gate whose
retries gave up after a few seconds would turn every waiting agent's restart
into a failure, so beyond its ``retries`` a plan keeps retrying for
``retry_for`` seconds, counted from the first failure of the outage (a
response that is not transient ends it), and never past the request's own
deadline: once a request has expired there is nothing left to wait for.

The window is measured in the plan's own time: the real time since the
outage began, or the pauses the plan asked for if they add up to more. In
production the two agree (a driver sleeps each pause); a test that injects
a ``sleep`` which returns at once still sees the window close after the
pauses it recorded, instead of hammering a closed port for a minute.

Once a window has closed the gate stays impatient until the server answers
again: the withdraw that follows a failed wait, or the next call of a
long-lived agent, gets the quick ``retries`` only, rather than a second
minute on a server already given up on.

Imports nothing beyond the standard library's clock: the hook's path.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tapgate.client._wire import Reply

__all__ = [
    "DEFAULT_RETRY_FOR",
    "MAX_DELAY",
    "Expiries",
    "Outage",
    "backoff",
    "earliest",
    "monotonic_deadline",
    "retry_after",
]

MAX_DELAY = 10.0
"""Seconds between two tries at most, whatever the backoff or a ``Retry-After`` asks."""

DEFAULT_RETRY_FOR = 60.0
"""Seconds a gate retries through an outage: a restart or a replica switch fits in it."""

_REMEMBERED = 256
"""Request deadlines a gate keeps: the requests a busy agent waits on at once, with room."""


class Outage:
    """The server's failures as one gate has seen them: since when, and whether it gave up."""

    def __init__(self, retry_for: float) -> None:
        self.retry_for = max(retry_for, 0.0)
        self._since: float | None = None
        self._paused = 0.0
        self._given_up = False

    def failed(self) -> None:
        """A request failed transiently: the outage begins now, unless it already has."""
        if self._since is None:
            self._since = time.monotonic()
            self._paused = 0.0

    def paused(self, seconds: float) -> None:
        """The plan waited ``seconds`` before trying again (its own measure of time)."""
        self._paused += seconds

    def answered(self) -> None:
        """The server answered: the outage, and any impatience, is over."""
        self._since = None
        self._paused = 0.0
        self._given_up = False

    def left(self, deadline: float | None) -> float:
        """Seconds still worth retrying (0: give up), bounded by ``deadline`` (monotonic).

        Giving up is remembered until :meth:`answered`.
        """
        if self._since is None or self._given_up:
            return 0.0
        elapsed = max(time.monotonic() - self._since, self._paused)
        left = self.retry_for - elapsed
        if deadline is not None:
            left = min(left, deadline - (self._since + elapsed))
        if left <= 0:
            self._given_up = True
            return 0.0
        return left


def backoff(base: float, attempt: int) -> float:
    """The pause before retry ``attempt`` (from 0): ``base`` doubling up to the cap, jittered."""
    import random  # only a retry needs it: the hook's allowed call starts without it

    ceiling = min(MAX_DELAY, base * 2.0**attempt)
    return ceiling * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not a secret


def retry_after(response: Reply) -> float:
    """The wait a ``Retry-After`` header asks for, capped at the backoff's ceiling; 0 if none.

    Both of RFC 9110's forms are read: delta-seconds and an HTTP date. A value
    that is neither is ignored (the backoff alone decides).
    """
    value = response.headers.get("Retry-After", "").strip()
    if value.isascii() and value.isdigit():  # str.isdigit alone takes "²"
        seconds = float(value)
    else:
        from email.utils import parsedate_to_datetime  # rare: not on the hook's start-up path

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is read as such
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), MAX_DELAY)


def earliest(*deadlines: float | None) -> float | None:
    """The first of the deadlines that are set, ``None`` if none is."""
    known = [d for d in deadlines if d is not None]
    return min(known) if known else None


def monotonic_deadline(expires_at: datetime) -> float:
    """``expires_at`` (wall clock) on the monotonic clock the window is measured with."""
    return time.monotonic() + (expires_at - datetime.now(UTC)).total_seconds()


class Expiries:
    """When the requests this gate has seen expire, by id: what caps a wait's window.

    Filled from the submit's answer and every poll's, so ``wait(request_id)``
    knows its request's deadline without being told; a decided request is
    forgotten, and only the latest few hundred are kept.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, datetime] = {}

    def note(self, request_id: str, expires_at: object) -> None:
        """Remember ``expires_at`` (a datetime or the wire's ISO text; anything else is ignored)."""
        if isinstance(expires_at, str):
            try:
                expires_at = datetime.fromisoformat(expires_at)
            except ValueError:
                return
        if not isinstance(expires_at, datetime) or expires_at.tzinfo is None:
            return
        self._by_id.pop(request_id, None)
        self._by_id[request_id] = expires_at
        while len(self._by_id) > _REMEMBERED:
            self._by_id.pop(next(iter(self._by_id)))

    def forget(self, request_id: str) -> None:
        self._by_id.pop(request_id, None)

    def deadline(self, request_id: str) -> float | None:
        """The request's expiry on the monotonic clock, ``None`` if unknown."""
        expires_at = self._by_id.get(request_id)
        return None if expires_at is None else monotonic_deadline(expires_at)
