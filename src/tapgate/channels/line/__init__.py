"""tapgate.channels.line: LINE, as one channel (loaded through the ``tapgate.channels`` registry).

- ``channel``: the contract (config, notifier, webhook route, live check)
- ``settings``: ``channels.line`` and the approver id format
- delivery: ``notifier`` (push, retry keys), ``flex``, ``flex_parts``, ``batch_flex``
- inbound: ``signature``, ``events`` (payloads), ``webhook`` (record, then 200),
  ``taps`` (what one event means), ``commands`` (typed ``id``, ``grants``,
  ``inbox``, ``help``), ``grants`` (revoke from the chat), ``reply``
"""

from tapgate.channels.line.channel import LineChannel

__all__ = ["channel"]

channel = LineChannel()
"""The entry point ``tapgate.channels: line``."""
