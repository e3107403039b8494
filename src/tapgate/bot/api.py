"""The agent HTTP API under /v1 (being written; see issue 4)."""

from __future__ import annotations

from aiohttp import web

__all__ = ["setup_api"]


def setup_api(app: web.Application) -> None:
    """Register the agent API routes."""
