"""Prometheus metrics of one tapgate server, fed by gate events.

prometheus_client is used rather than a hand-written exposition format: it is
the reference implementation and gets escaping and types right. Each app
gets its own registry, so several apps (tests, benchmarks) can live in one
process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from tapgate.gate.bus import EventBus
from tapgate.gate.models import DecidedAtOnce, Decision, GateEvent

__all__ = ["PENDING_COUNT_TIMEOUT", "Metrics"]

log = logging.getLogger(__name__)

PENDING_COUNT_TIMEOUT = 2.0
"""Seconds a scrape waits for the pending count; Prometheus gives a scrape 10 s in all."""


class Metrics:
    """Requests by decision, the pending gauge, deliveries, and tap-to-decision latency."""

    def __init__(self, *, pending_count_timeout: float = PENDING_COUNT_TIMEOUT) -> None:
        self.pending_count_timeout = pending_count_timeout
        """Seconds a scrape waits for the pending count before reporting the last one."""
        self.registry = CollectorRegistry()
        self._counting: asyncio.Future[int] | None = None
        # Each (verdict, source) child, looked up once: labels() hashes and
        # locks on every call, and every allowed call counts one decision.
        self._decision_counters: dict[tuple[str, str], Counter] = {}
        self.decisions = Counter(
            "tapgate_decisions",
            "Tool calls decided in this process, by verdict and source",
            ["verdict", "source"],
            registry=self.registry,
        )
        # Set from the database at each scrape (see health.metrics): counting this
        # process's events would drift as soon as a replica or `tapgate resolve`
        # decides something.
        self.pending = Gauge(
            "tapgate_pending_requests",
            "Requests waiting for an approver (the whole database)",
            registry=self.registry,
        )
        self.deliveries = Counter(
            "tapgate_deliveries",
            "Approval messages delivered, by channel",
            ["channel"],
            registry=self.registry,
        )
        self.delivery_failures = Counter(
            "tapgate_delivery_failures",
            "Failed sends of approval messages, by channel; permanent ones are given up",
            ["channel", "permanent"],
            registry=self.registry,
        )
        self.tap_latency = Histogram(
            "tapgate_tap_to_decision_seconds",
            "From a verified webhook tap to the recorded decision",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )
        self.waiters = Gauge(
            "tapgate_parked_waiters",
            "Agents waiting for a decision in this process",
            registry=self.registry,
        )
        self.unreachable = Counter(
            "tapgate_unreachable_requests",
            "Requests ended at once because no approver could be reached on any channel",
            registry=self.registry,
        )
        self.asks_refused = Counter(
            "tapgate_asks_refused",
            "Asks refused because an agent was over a limit, by agent and limit",
            ["agent", "limit"],
            registry=self.registry,
        )
        self.webhook_rejections = Counter(
            "tapgate_webhook_rejections",
            "Webhook calls refused, by platform and reason",
            ["platform", "reason"],
            registry=self.registry,
        )

    def webhook_rejected(self, platform: str, reason: str) -> None:
        """Count one refused webhook call (``signature``, ``payload``, ...) of ``platform``."""
        self.webhook_rejections.labels(platform, reason).inc()

    def watch(self, bus: EventBus) -> None:
        """Follow the gate's events."""
        bus.subscribe(self._on_event)
        bus.subscribe_at_once(self._on_decided_at_once)

    async def refresh_pending(self, count: Callable[[], Awaitable[int]]) -> None:
        """Set the pending gauge from ``count()``: one count at a time, each wait bounded.

        ``/metrics`` is anonymous and may be scraped often: a slow database (a
        migration holding a lock) must cost one query in flight, not one per
        scrape, and must not hold a scrape past Prometheus' timeout. On a
        timeout or an error the gauge keeps its last value and it is logged.
        """
        if self._counting is None or self._counting.done():
            self._counting = asyncio.ensure_future(count())
            self._counting.add_done_callback(_retrieved)
        try:
            value = await asyncio.wait_for(
                asyncio.shield(self._counting), self.pending_count_timeout
            )
        except TimeoutError:
            log.warning("metrics: pending count still running; the last count is reported")
            return
        except Exception as exc:  # any database failure: keep the last count
            log.warning("metrics: could not count pending requests: %r", exc)
            return
        self.pending.set(value)

    def delivery_failed(self, channel: str, permanent: bool) -> None:
        """Count one failed send (the dispatcher's ``on_failure``)."""
        self.delivery_failures.labels(channel=channel, permanent=str(permanent).lower()).inc()

    def _on_event(self, event: GateEvent) -> None:
        if event.kind == "notified":
            self.deliveries.labels(channel=str(event.detail.get("channel", "?"))).inc()
        elif event.kind in ("resolved", "expired", "cancelled"):
            decision = event.request.decision()
            if decision is not None:
                self._count(decision)

    def _on_decided_at_once(self, event: DecidedAtOnce) -> None:
        self._count(event.decision)

    def _count(self, decision: Decision) -> None:
        key = (decision.verdict, decision.source)
        counter = self._decision_counters.get(key)
        if counter is None:
            counter = self.decisions.labels(verdict=decision.verdict, source=decision.source)
            self._decision_counters[key] = counter
        counter.inc()

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)


def _retrieved(task: asyncio.Future[int]) -> None:
    """Mark a count's error as seen (it is logged by the scrape that waited for it, if any)."""
    if not task.cancelled():
        task.exception()
