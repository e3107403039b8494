"""tapgate.channels: the platforms approvers answer on, each one folder behind one contract.

:mod:`tapgate.channels.contract` says what a channel implements;
:mod:`tapgate.channels.registry` finds the installed ones through the
``tapgate.channels`` entry-point group. The built-in channels live beside
them (``console/``, ``line/``, ``slack/``) and are loaded only through the
registry; ``tap_log`` is the one decided-tap log line every webhook shares.
"""

from tapgate.channels.contract import (
    AddressField,
    Channel,
    ChannelDefaults,
    ChannelHost,
    CheckResult,
    ConversationBook,
    DeliveryHost,
    Handler,
    Receiver,
    Route,
)

__all__ = [
    "AddressField",
    "Channel",
    "ChannelDefaults",
    "ChannelHost",
    "CheckResult",
    "ConversationBook",
    "DeliveryHost",
    "Handler",
    "Receiver",
    "Route",
]
