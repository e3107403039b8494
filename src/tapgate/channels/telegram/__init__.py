"""tapgate.channels.telegram: Telegram, one channel (found through ``tapgate.channels``).

- ``channel``: the contract (config, notifier, polling or webhook, live check)
- ``settings``: ``channels.telegram`` and the approver id format
- ``api``: the small Bot API client and the bot's shared flood wait
- delivery: ``notifier`` (send, edit, the 403 that names the fix), ``cards``
- inbound: ``receiver`` (poll or webhook, record, acknowledge, apply),
  ``updates`` (payloads), ``taps`` (what one update means), ``commands``
  (``/start``, ``/grants``, ``/inbox``, ``/help``), ``webhook_setup``
- ``check``: ``getMe``, ``getChat`` per approver
"""

from tapgate.channels.telegram.channel import TelegramChannel

__all__ = ["channel"]

channel = TelegramChannel()
"""The entry point ``tapgate.channels: telegram``."""
