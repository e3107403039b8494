"""tapgate.channels.email: email, as one channel (loaded through the ``tapgate.channels`` registry).

- ``channel``: the contract (config, notifier, review page routes, live check)
- ``settings``: ``channels.email`` and the address format
- delivery: ``notifier`` (a link per mail, the threaded outcome), ``message``
  (multipart text + HTML, threading headers), ``render`` (from the
  presentation model), ``smtp`` (the relay's answer as a delivery error)
- inbound: ``review`` (GET/HEAD show, only the form's POST decides), ``page``
"""

from tapgate.channels.email.channel import EmailChannel

__all__ = ["channel"]

channel = EmailChannel()
"""The entry point ``tapgate.channels: email``."""
