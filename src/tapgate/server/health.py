"""Liveness, readiness and metrics endpoints for orchestrators and Prometheus."""

from __future__ import annotations

from aiohttp import web

from tapgate.server.keys import METRICS, STORE

__all__ = ["setup_health"]


async def healthz(_request: web.Request) -> web.Response:
    """The process answers: nothing more is checked (restart it if this fails)."""
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Ready to take traffic: the database answers and is at the head migration."""
    store = request.app.get(STORE)
    if store is None or not await store.is_current():
        return web.json_response({"status": "unavailable", "database": "not ready"}, status=503)
    return web.json_response({"status": "ready"})


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition; the pending gauge is counted in the database first.

    A scrape must answer even when the database does not, or is slow: the
    gauge then keeps its last value (see ``Metrics.refresh_pending``).
    """
    store = request.app.get(STORE)
    if store is not None:
        await request.app[METRICS].refresh_pending(lambda: store.count_requests(status="pending"))
    body = request.app[METRICS].exposition()
    return web.Response(
        body=body,
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def setup_health(app: web.Application) -> None:
    """Register ``/healthz``, ``/readyz`` and ``/metrics``."""
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
