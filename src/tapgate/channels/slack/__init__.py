"""tapgate.channels.slack: Slack, as one channel (loaded through the ``tapgate.channels`` registry).

- ``channel``: the contract (config, notifier, webhook route or Socket Mode, live check)
- ``settings``: ``channels.slack`` and the member id format
- delivery: ``notifier`` (post, update, find a lost post), ``blocks``, ``batch_blocks``, ``text``
- inbound: ``signature``, ``bolt`` (slack-bolt, fenced), ``payloads``, ``inbox``
  (the stable event id a redelivery shares), ``webhook`` (record, then ack),
  ``socket`` (Socket Mode), ``taps``, ``replies`` (ephemeral sentences),
  ``modals`` (a deny's reason, a question's answer, an edit), ``edits``,
  ``batches`` ("Deny all"), ``commands`` (``/tapgate``), ``grants``, ``sign_in``
"""

from tapgate.channels.slack.channel import SlackChannel

__all__ = ["channel"]

channel = SlackChannel()
"""The entry point ``tapgate.channels: slack``."""
