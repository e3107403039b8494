"""tapgate.bot: the deployable app. YAML config and the ``tapgate`` command line.

The layer that wires everything below it; nothing imports it back.
"""

from tapgate.bot.cli import main
from tapgate.bot.config import Config, load_config, parse_config

__all__ = ["Config", "load_config", "main", "parse_config"]
