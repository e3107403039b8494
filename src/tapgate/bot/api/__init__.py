"""tapgate.bot.api: the HTTP APIs agents call, one module per concept.

- :mod:`~tapgate.bot.api.agent`: the agent API's routes under ``/v1`` (submit,
  long-poll, cancel, list)
- :mod:`~tapgate.bot.api.stream`: its server-sent event stream, ``GET /v1/events``
- :mod:`~tapgate.bot.api.sandbox`: ``GET /v1/tools/{tool}/sandbox``, the limits
  ``tapgate run --sandbox`` applies
- :mod:`~tapgate.bot.api.models` and :mod:`~tapgate.bot.api.openapi`: its wire
  format and the OpenAPI document generated from it
- :mod:`~tapgate.bot.api.humanlayer` and :mod:`~tapgate.bot.api.humanlayer_models`:
  the HumanLayer-compatible API under ``/humanlayer/v1`` and its wire format
- :mod:`~tapgate.bot.api.middleware`: what both APIs share, the bearer-token
  check and JSON errors

Named ``api`` rather than ``http``: the webhooks, health and metrics routes
serve HTTP too but are not here, and ``http`` would read as the stdlib
package. Nothing here imports the CLI (``tests/test_conventions.py``).
"""

from tapgate.bot.api.agent import setup_api
from tapgate.bot.api.humanlayer import setup_humanlayer

__all__ = ["setup_api", "setup_humanlayer"]
