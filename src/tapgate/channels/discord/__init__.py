"""tapgate.channels.discord: Discord as one channel (found through the channel registry).

- ``channel``: the contract (config, notifier, interactions route, live check)
- ``settings``: ``channels.discord`` and the approver id format
- delivery: ``notifier`` (DM, post, edit), ``cards``, ``batch_cards``, ``text``
  (escaping), ``rest`` (the REST client), ``ratelimit`` (buckets, 429s)
- inbound: ``signature`` (Ed25519), ``interactions`` (payloads), ``webhook``
  (record, decide, answer within 3 s), ``presses`` (what one press means),
  ``responses`` (the answers), ``modals`` (deny reason, Deny all's reason,
  answer), ``edits`` (Edit… then approve), ``commands`` (``/whoami``,
  ``/grants``, ``/inbox``, ``/help``), ``registration`` (registering them)
"""

from tapgate.channels.discord.channel import DiscordChannel

__all__ = ["channel"]

channel = DiscordChannel()
"""The entry point ``tapgate.channels: discord``."""
