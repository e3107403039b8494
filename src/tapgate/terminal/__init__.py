"""tapgate.terminal: drawing a request on an interactive terminal, and reading keys.

Shared by the console channel's prompt (the in-process gate's asks) and the
``tapgate inbox`` command: both draw the same rich presentation in ANSI
colour and read one key at a time without blocking the event loop.
"""

__all__: list[str] = []
