"""tapgate.channels.teams: Microsoft Teams, as one channel (loaded through the registry).

- ``channel``: the contract (config, notifier, webhook route, live check)
- ``settings``: ``channels.teams`` and the approver id format (``<tenant>/<object id>``)
- delivery: ``notifier`` (cards, redraws), ``connector`` (the bot's token, the
  Bot Connector's send and update), ``cards``, ``batch_cards``, ``card_parts``
- inbound: ``auth`` (the Bot Connector's JWT), ``activities`` (payloads),
  ``webhook`` (record, decide, answer with the card), ``taps`` (what a press means)
- ``check``: credentials, and which approvers have no conversation yet
"""

from tapgate.channels.teams.channel import TeamsChannel

__all__ = ["channel"]

channel = TeamsChannel()
"""The entry point ``tapgate.channels: teams``."""
