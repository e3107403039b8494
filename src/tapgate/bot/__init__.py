"""tapgate.bot: the deployable app. YAML config and the ``tapgate`` command line.

The layer that wires everything below it; nothing imports it back. Its names
load on first use (PEP 562), so the console script's agent-side commands
start without pydantic models and YAML.
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
