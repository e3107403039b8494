"""tapgate.server.api: the HTTP APIs agents call, one module per concept.

- :mod:`~tapgate.server.api.agent`: the agent API's routes under ``/v1`` (submit,
  long-poll, cancel, list)
- :mod:`~tapgate.server.api.stream`: its server-sent event stream, ``GET /v1/events``
- :mod:`~tapgate.server.api.sandbox`: ``GET /v1/tools/{tool}/sandbox``, the limits
  ``tapgate run --sandbox`` applies
- :mod:`~tapgate.server.api.models` and :mod:`~tapgate.server.api.openapi`: its wire
  format and the OpenAPI document generated from it
- :mod:`~tapgate.server.api.humanlayer` and :mod:`~tapgate.server.api.humanlayer_models`:
  the HumanLayer-compatible API under ``/humanlayer/v1`` and its wire format
- :mod:`~tapgate.server.api.middleware`: what both APIs share, the bearer-token
  check and JSON errors

Named ``api`` rather than ``http``: the webhooks, health and metrics routes
serve HTTP too but are not here, and ``http`` would read as the stdlib
package. Nothing here imports the CLI (``tests/test_conventions.py``).
"""

from tapgate.server.api.agent import setup_api
from tapgate.server.api.humanlayer import setup_humanlayer

__all__ = ["setup_api", "setup_humanlayer"]
