"""``channels.console``: print requests on the server's console."""

from __future__ import annotations

from tapgate.config.fields import Section

__all__ = ["ConsoleConfig"]


class ConsoleConfig(Section):
    """Print requests on the server's console: for trying tapgate without a chat app."""

    enabled: bool = True
