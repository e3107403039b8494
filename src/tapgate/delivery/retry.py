"""The one place tapgate decides when a failed delivery is tried again.

Two horizons, one module, so the numbers can be read side by side:

- *short*: inside a notifier, :func:`delivery_retrying` (every chat
  channel's, built on :func:`build_retrying`) retries a transient
  failure (a timeout, a dropped connection, a 5xx, a rate limit) a few times
  within seconds, honouring the platform's ``Retry-After``;
- *long*: when a notifier gives up with a retryable
  :class:`~tapgate.errors.DeliveryError`, the outbox dispatcher waits
  :func:`outbox_backoff` before the row's next attempt, which survives restarts.

Also owns the classification both platforms share: which exceptions from the
HTTP stack are transient (:func:`is_transport_error`), which could hide a
delivered message (:func:`may_have_been_delivered`), and which statuses are
worth another try (:func:`is_transient_status`). Notifiers translate platform
errors into ``DeliveryError`` inside each attempt, so the retry predicate is
simply the error's own ``retryable`` (:func:`is_retryable_delivery`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import tenacity
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from tapgate.errors import DeliveryError

__all__ = [
    "OUTBOX_BASE_DELAY",
    "OUTBOX_MAX_DELAY",
    "TRANSPORT_ERRORS",
    "RetryPolicy",
    "build_retrying",
    "delivery_retry_after",
    "delivery_retrying",
    "describe_error",
    "is_retryable_delivery",
    "is_transient_status",
    "is_transport_error",
    "may_have_been_delivered",
    "outbox_backoff",
    "parse_retry_after",
]

_log = logging.getLogger(__name__)

TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,  # asyncio.TimeoutError is TimeoutError since 3.11; aiohttp.ServerTimeoutError too
    aiohttp.ClientConnectionError,  # ServerDisconnectedError, ClientConnectorError, ClientOSError
    aiohttp.ClientPayloadError,  # the connection died while the body was being read
    ConnectionError,
)
"""Exceptions that mean "the network failed", never "the platform said no"."""

OUTBOX_BASE_DELAY = 5.0
OUTBOX_MAX_DELAY = 15 * 60.0
_OUTBOX_JITTER = 0.1  # up to +10 %: spreads rows that failed together, keeps the order
_TOO_MANY_REQUESTS = 429


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How hard a notifier tries before handing a failure back to the outbox.

    Attempts are few and delays short on purpose: the dispatcher's long-horizon
    retry (:func:`outbox_backoff`) takes over after that, so a notifier never
    holds a dispatcher slot for minutes. ``max_delay`` caps the exponential
    part; ``jitter`` is the upper bound, in seconds, of a random delay added on
    top, so retries of messages that failed together spread out. A ``Retry-After`` above
    ``max_retry_after`` is not slept through: the notifier gives up at once and
    the error's ``retry_after`` tells the dispatcher when to come back.
    """

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.5
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if min(self.base_delay, self.max_delay, self.jitter, self.max_retry_after) < 0:
            raise ValueError("retry delays must not be negative")


class _wait_retry_after_or(tenacity.wait.wait_base):  # noqa: N801 - tenacity's naming
    """Sleep what the server asked for (``Retry-After``), else ``fallback``'s backoff."""

    def __init__(
        self,
        fallback: tenacity.wait.wait_base,
        retry_after: Callable[[BaseException], float | None],
    ) -> None:
        self.fallback = fallback
        self.retry_after = retry_after

    def __call__(self, retry_state: RetryCallState) -> float:
        requested = _requested_delay(retry_state, self.retry_after)
        return self.fallback(retry_state) if requested is None else requested


class _stop_if_retry_after_exceeds(tenacity.stop.stop_base):  # noqa: N801 - tenacity's naming
    """Give up when the server asks for a longer pause than a notifier should sleep."""

    def __init__(self, limit: float, retry_after: Callable[[BaseException], float | None]) -> None:
        self.limit = limit
        self.retry_after = retry_after

    def __call__(self, retry_state: RetryCallState) -> bool:
        requested = _requested_delay(retry_state, self.retry_after)
        return requested is not None and requested > self.limit


def _requested_delay(
    retry_state: RetryCallState, retry_after: Callable[[BaseException], float | None]
) -> float | None:
    outcome = retry_state.outcome
    error = outcome.exception() if outcome is not None and outcome.failed else None
    if error is None:
        return None
    requested = retry_after(error)
    return None if requested is None else max(0.0, requested)


def build_retrying(
    policy: RetryPolicy,
    *,
    retryable: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException], float | None],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    label: str = "delivery",
) -> AsyncRetrying:
    """A fresh :class:`tenacity.AsyncRetrying` for one delivery.

    Build one per call: tenacity keeps its iteration state on the instance, so
    concurrent sends must not share one. Capped exponential backoff plus
    jitter, replaced by the server's ``Retry-After`` when ``retry_after`` finds
    one; the last error is re-raised unchanged (``reraise=True``) so callers
    see a ``DeliveryError``, never tenacity's ``RetryError``.
    """
    backoff = wait_exponential(
        multiplier=policy.base_delay, max=policy.max_delay, exp_base=2
    ) + wait_random(0, policy.jitter)
    return AsyncRetrying(
        stop=stop_after_attempt(policy.attempts)
        | _stop_if_retry_after_exceeds(policy.max_retry_after, retry_after),
        wait=_wait_retry_after_or(backoff, retry_after),
        retry=retry_if_exception(retryable),
        sleep=sleep,
        before_sleep=_log_retry(label),
        reraise=True,
    )


def delivery_retrying(
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    label: str = "delivery",
) -> AsyncRetrying:
    """:func:`build_retrying` for a notifier's call that raises ``DeliveryError``.

    What every channel's send retries is the same: a retryable
    ``DeliveryError`` (or a transport error), waiting its ``retry_after``
    when the platform gave one; only the policy, the sleep and the label
    differ.
    """
    return build_retrying(
        policy,
        retryable=is_retryable_delivery,
        retry_after=delivery_retry_after,
        sleep=sleep,
        label=label,
    )


def _log_retry(label: str) -> Callable[[RetryCallState], None]:
    def before_sleep(retry_state: RetryCallState) -> None:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        delay = retry_state.next_action.sleep if retry_state.next_action else 0.0
        # INFO, not WARNING: a retry is routine; the final failure is the dispatcher's to report.
        _log.info(
            "%s failed (attempt %d): %s; retrying in %.2f s",
            label,
            retry_state.attempt_number,
            error,
            delay,
        )

    return before_sleep


def outbox_backoff(attempts: int, *, retry_after: float | None = None) -> float:
    """Seconds the dispatcher waits before attempt ``attempts + 1`` of an outbox row.

    ``attempts`` counts the attempts already made (1 after the first failure):
    5 s, 10 s, 20 s… capped at 15 minutes, plus up to 10 % jitter so rows that
    failed together (a platform outage) do not all return in the same second.
    A platform's ``retry_after`` is a floor, never shortened.
    """
    exponent = min(max(attempts, 1) - 1, 32)  # 2**32 * 5 s is far past the cap already
    delay = min(OUTBOX_BASE_DELAY * 2.0**exponent, OUTBOX_MAX_DELAY)
    delay += delay * _OUTBOX_JITTER * random.random()  # noqa: S311 - jitter, not a secret
    return max(delay, retry_after or 0.0)


def is_transport_error(error: BaseException) -> bool:
    """True when the network failed: a timeout, a refused or dropped connection."""
    return isinstance(error, TRANSPORT_ERRORS)


def may_have_been_delivered(error: BaseException) -> bool:
    """True when a transport error could have followed a delivered request.

    Only a connection that never opened (:class:`aiohttp.ClientConnectorError`)
    proves the request was not sent; a timeout or a dropped connection may
    have lost the answer to a request the platform performed.
    """
    return is_transport_error(error) and not isinstance(error, aiohttp.ClientConnectorError)


def is_transient_status(status: int | None) -> bool:
    """True for HTTP statuses another attempt may fix: 429 and 5xx."""
    return status is not None and (status == _TOO_MANY_REQUESTS or status >= 500)


def is_retryable_delivery(error: BaseException) -> bool:
    """The retry predicate of every notifier: a ``DeliveryError`` that says it is retryable."""
    return isinstance(error, DeliveryError) and error.retryable


def delivery_retry_after(error: BaseException) -> float | None:
    """The platform's requested delay carried by a ``DeliveryError``, if any."""
    return error.retry_after if isinstance(error, DeliveryError) else None


def describe_error(error: BaseException) -> str:
    """``ServerDisconnectedError: Server disconnected``: the type often says more than the text."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header; ``None`` when absent or not a number.

    Slack sends whole seconds; the HTTP-date form is not used by either platform
    and is treated as absent (the backoff applies instead).
    """
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
