"""tapgate.channels.console: the terminal, as one channel (loaded through the registry).

- ``channel``: the contract (always on without another channel; no routes)
- ``notifier``: requests as plain text with the ``tapgate resolve`` commands
- ``prompt``: the in-process gate's terminal prompt (a developer at the keyboard answers)
"""

from tapgate.channels.console.channel import ConsoleChannel

__all__ = ["channel"]

channel = ConsoleChannel()
"""The entry point ``tapgate.channels: console``."""
