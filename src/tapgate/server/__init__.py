"""tapgate.server: the deployable app. One aiohttp application that owns every component.

- ``app``: assembly (store, gate, dispatcher, heartbeat, the enabled channels)
- ``routes``: the enabled channels' webhook routes and background listeners
- ``api``: the HTTP APIs agents call (``/v1`` with its SSE stream and OpenAPI,
  the HumanLayer-compatible API, their shared auth and JSON errors)
- ``web_inbox``: the approvers' web inbox (sign-in, pending, history, answers)
- beside them: ``bodies`` (every route's body, read bounded in time and size),
  ``health``, ``metrics``, ``heartbeat``, ``access_log``, ``keys``

Its names load on first use (PEP 562).
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports

if TYPE_CHECKING:
    from tapgate.server.app import build_app

__all__ = ["build_app"]

_LAZY = {"build_app": "tapgate.server.app"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
