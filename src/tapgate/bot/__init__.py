"""tapgate.bot: the deployable app. YAML config, the server and the ``tapgate`` command line.

The layer that wires everything below it; nothing imports it back. One
sub-package per concept, with the app's own modules beside them:

- ``bot.config``: the YAML config (loading, ``${VAR}`` substitution, one module per section)
- ``bot.api``: the HTTP APIs agents call (``/v1`` with its SSE stream and OpenAPI,
  the HumanLayer-compatible API, their shared auth and JSON errors)
- ``bot.cli``: the ``tapgate`` command line and its typed command table
- beside them: app assembly (``app``, ``routes``, ``keys``), ``bodies`` (every
  route's body, read bounded in time and size), ``health``, ``metrics``,
  ``heartbeat``, ``access_log``

Its names load on first use (PEP 562), so the console script's agent-side
commands start without pydantic models and YAML.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports

if TYPE_CHECKING:
    from tapgate.bot.cli import main
    from tapgate.bot.config import Config, load_config, parse_config

__all__ = ["Config", "load_config", "main", "parse_config"]

_LAZY = {
    "Config": "tapgate.bot.config",
    "load_config": "tapgate.bot.config",
    "parse_config": "tapgate.bot.config",
    "main": "tapgate.bot.cli",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
