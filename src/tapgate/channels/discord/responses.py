"""The interaction responses tapgate answers Discord with, as JSON.

Every interaction is answered in the HTTP response to Discord's POST, within
3 seconds: ``4`` a message (here always ephemeral: ``flags`` 64, only the
presser sees it), ``6`` acknowledged with nothing to show yet, ``7`` the
pressed message redrawn, ``9`` a modal (:mod:`.modals`).
"""

from __future__ import annotations

from typing import Any

from tapgate.channels.discord.cards import NO_MENTIONS

__all__ = ["DEFERRED", "EPHEMERAL", "UPDATE_MESSAGE", "Response", "ephemeral", "update"]

Response = dict[str, Any]
"""An interaction response, as JSON."""
UPDATE_MESSAGE = 7
DEFERRED: Response = {"type": 6}
"""DEFERRED_UPDATE_MESSAGE: acknowledged, the card changes later (or not at all)."""
EPHEMERAL = 64
_CONTENT_MAX = 2000


def ephemeral(text: str, *, components: list[Any] | None = None, flags: int = 0) -> Response:
    """A message only the presser sees (CHANNEL_MESSAGE_WITH_SOURCE with flags 64)."""
    data: dict[str, Any] = {
        "content": text[:_CONTENT_MAX],
        "flags": EPHEMERAL | flags,
        "allowed_mentions": NO_MENTIONS,
    }
    if components:
        data["components"] = components
    return {"type": 4, "data": data}


def update(data: dict[str, Any]) -> Response:
    """UPDATE_MESSAGE: the message the pressed button is on, redrawn as ``data``."""
    return {"type": UPDATE_MESSAGE, "data": data}
