"""The one exception tree of tapgate.

Every error tapgate raises on purpose derives from :class:`TapgateError`, so a
caller can catch the whole family at once. The tree is deliberately small::

    TapgateError
    ├── ConfigError            bad YAML / environment; names the YAML path
    │   └── ConfigErrors       several at once (carries errors), so one run shows them all
    ├── PolicyError            a rule or tool spec that cannot be compiled
    ├── StoreError             the database refused or is not migrated
    │   └── RequestNotFound    no request with that id (carries request_id)
    ├── TooManyAsks            an agent over its max_pending or asks-per-minute limit
    │                          (carries agent, limit, retry_after)
    ├── ResolveError           a resolve / cancel that did not take effect
    │   ├── AlreadyResolved    the request is terminal already (carries status, resolved_by,
    │   │                      and the request as the refusal saw it)
    │   ├── RequestExpired     the request's expires_at has passed (carries the request)
    │   ├── NotAnApprover      the tapper may not decide this request
    │   └── DuplicateEvent     the platform event was handled before (a redelivery)
    └── DeliveryError          a notifier could not deliver (carries status, retry_after,
        └── PermanentDeliveryError    retryable); the permanent kind is never retried

Exceptions carry the data a handler needs (``request_id``, ``status``,
``retry_after``) so that handlers never parse messages.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AlreadyResolved",
    "ConfigError",
    "ConfigErrors",
    "DeliveryError",
    "DuplicateEvent",
    "NotAnApprover",
    "PermanentDeliveryError",
    "PolicyError",
    "RequestExpired",
    "RequestNotFound",
    "ResolveError",
    "StoreError",
    "TapgateError",
    "TooManyAsks",
]


class TapgateError(Exception):
    """Root of every error tapgate raises on purpose."""


class ConfigError(TapgateError):
    """The configuration is invalid.

    ``path`` is the YAML path of the offending value (``policy.rules[3].tool``)
    so that the operator can find it without reading a traceback.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class ConfigErrors(ConfigError):
    """Several config mistakes found in one run, each a :class:`ConfigError`.

    Fixing one mistake only to be shown the next costs an operator a round
    trip per mistake. ``path`` and ``message`` are the first error's, so a
    handler that reads one still works; the text lists them all, one a line.
    """

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        flat = [e for error in errors for e in getattr(error, "errors", (error,))]
        self.errors: tuple[ConfigError, ...] = tuple(flat)
        first = self.errors[0]
        super().__init__(first.path, first.message)
        lines = "".join(f"\n  {error}" for error in self.errors)
        self.args = (f"{len(self.errors)} problems in the configuration:{lines}",)

    def __str__(self) -> str:
        return str(self.args[0])

    @classmethod
    def raise_any(cls, errors: Sequence[ConfigError]) -> None:
        """Raise nothing for no errors, the error itself for one, all of them for more."""
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise cls(errors)


class PolicyError(TapgateError):
    """A policy rule or tool specification could not be compiled."""

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        super().__init__(f"{source}: {message}")


class StoreError(TapgateError):
    """The store could not do what was asked (database unreachable, not migrated)."""


class RequestNotFound(StoreError):
    """No request has this id."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        super().__init__(f"no request with id {request_id!r}")


class ResolveError(TapgateError):
    """A resolve or cancel did not change the request."""

    def __init__(self, request_id: str, message: str) -> None:
        self.request_id = request_id
        super().__init__(message)


class AlreadyResolved(ResolveError):
    """The request reached a terminal status before this attempt."""

    def __init__(
        self,
        request_id: str,
        status: str,
        resolved_by: str | None,
        *,
        request: object = None,
    ) -> None:
        self.status = status
        self.resolved_by = resolved_by
        self.request = request
        """The request as the refusing transaction saw it, so nobody reads it again.

        A ``tapgate.gate.models.Request``; typed ``object`` because this module
        sits beside the layers and imports none of them."""
        by = f" by {resolved_by}" if resolved_by else ""
        super().__init__(request_id, f"request {request_id} is already {status}{by}")


class RequestExpired(ResolveError):
    """The request's deadline passed; no decision can be recorded any more."""

    def __init__(self, request_id: str, *, request: object = None) -> None:
        self.request = request
        """The request as the refusing transaction saw it, so nobody reads it again.

        A ``tapgate.gate.models.Request``; typed ``object`` because this module
        sits beside the layers and imports none of them."""
        super().__init__(request_id, f"request {request_id} expired")


class NotAnApprover(ResolveError):
    """The person who tapped is not an approver of this request."""

    def __init__(self, request_id: str, who: str) -> None:
        self.who = who
        super().__init__(request_id, f"{who} is not an approver for request {request_id}")


class DuplicateEvent(ResolveError):
    """The webhook event carrying this decision was already handled: a redelivery."""

    def __init__(self, request_id: str, event_id: str) -> None:
        self.event_id = event_id
        super().__init__(request_id, f"event {event_id} was already handled")


class DeliveryError(TapgateError):
    """A notifier failed to deliver a message.

    ``retryable`` tells the dispatcher whether another attempt may succeed;
    ``retry_after`` is the platform's requested delay in seconds, if it sent one.
    """

    retryable: bool = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


class PermanentDeliveryError(DeliveryError):
    """A delivery failure that no retry can fix (4xx, LINE monthly quota)."""

    retryable = False


class TooManyAsks(TapgateError):
    """An agent asked more than its limits allow; nothing was created and nobody pinged.

    ``limit`` is ``max_pending`` or ``asks_per_minute``; ``retry_after`` is
    when asking again can succeed (seconds, at least 1).
    """

    def __init__(self, agent: str, limit: str, allowed: int, retry_after: float) -> None:
        self.agent = agent
        self.limit = limit
        self.allowed = allowed
        self.retry_after = max(1.0, retry_after)
        what = "pending requests" if limit == "max_pending" else "asks a minute"
        super().__init__(f"agent {agent!r} is over its limit of {allowed} {what}")
