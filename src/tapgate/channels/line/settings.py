"""``channels.line`` and ``approvers[].line``: the LINE Messaging API channel's config."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from tapgate.config.fields import Duration, HttpUrl, Secret, Section

__all__ = ["LineConfig", "ReasonWindow", "parse_line_user"]

_LINE_USER = re.compile(r"U[0-9a-f]{32}")

ReasonWindow = Annotated[Duration, Field(ge=10.0, le=3600.0)]
"""How long LINE waits for a typed reason: 10 s to 1 h (a deny must not wait longer)."""


class LineConfig(Section):
    """The LINE Messaging API channel that pushes requests and receives taps.

    ``reason_window``: after "Deny…" (or a question's Reply), how long the
    approver's next text message is taken as the reason (the answer); when
    it ends without one, the deny is made without a reason.
    """

    channel_access_token: Secret
    channel_secret: Secret
    api_base_url: HttpUrl = "https://api.line.me"
    timeout: Duration = 10.0
    reason_window: ReasonWindow = 300.0


def parse_line_user(value: str) -> str:
    """A LINE user id as webhook events carry it: ``U`` + 32 lower-case hex digits."""
    # A wrong id is accepted by LINE's push API only to fail later, and never
    # matches a tap: the approver would silently be unreachable.
    if not _LINE_USER.fullmatch(value):
        raise ValueError(
            "expected a LINE user id: U and 32 lower-case hex digits (send 'id' to the bot)"
        )
    return value
