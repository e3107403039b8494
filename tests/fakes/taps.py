"""What the platforms send when an approver taps, signed for real, plus a free port.

Shared by the multi-process tests, the webhook tests and the benchmarks, so
every harness signs taps the way LINE and Slack do (over the exact bytes
sent) and nobody reimplements it. The HMACs are computed here with hashlib,
independently of tapgate's own verification code, so a webhook test checks
the server against a separate signer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

__all__ = [
    "LINE_EVENT_TIME",
    "ReservedPort",
    "free_port",
    "line_body",
    "line_event",
    "line_headers",
    "signed_line_tap",
    "signed_line_text",
    "signed_slack_tap",
    "slack_form",
    "slack_headers",
]

LINE_EVENT_TIME = 1763700000000  # a fixed event timestamp (ms): LINE's events carry one
SLACK_TEAM = "T0TAPGATE"


def free_port() -> int:
    """A loopback port nobody listens on right now (for a server in another process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class ReservedPort:
    """A loopback port bound now, for an in-process ``TestServer`` that starts later.

    A server whose config names its own URL needs the port before it starts.
    :func:`free_port` closes its socket, so between choosing the port and
    binding it anything else on the machine (another worker, a fake on port
    0) can take it: seen as ``Address already in use``. This socket stays
    bound and is handed to the server: ``TestServer(app, port=r.port,
    socket_factory=r.socket_factory)``. Bound and never listening, it is also
    a port that refuses connections for as long as it is held (the
    ``closed_port`` fixture).
    """

    sock: socket.socket = field(default_factory=socket.socket)
    port: int = field(init=False)
    """The bound port (still known after the server has closed the socket)."""

    def __post_init__(self) -> None:
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def socket_factory(self, host: str, port: int, family: socket.AddressFamily) -> socket.socket:
        """``TestServer``'s ``socket_factory``: the bound socket, whatever it asks for."""
        return self.sock


def line_headers(secret: str, body: bytes) -> dict[str, str]:
    """The headers LINE sends with ``body``: JSON, and ``X-Line-Signature`` over its bytes."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return {
        "Content-Type": "application/json",
        "X-Line-Signature": base64.b64encode(digest).decode(),
    }


def line_body(*events: dict[str, Any], destination: str = "Ubot") -> bytes:
    """A LINE webhook body: ``events`` for the bot ``destination``, as the bytes to sign."""
    return json.dumps({"destination": destination, "events": list(events)}).encode()


def line_event(
    kind: str,
    user: str | None,
    *,
    source: str = "user",
    event_id: str | None = None,
    redelivery: bool = False,
    timestamp: int = LINE_EVENT_TIME,
    **content: Any,
) -> dict[str, Any]:
    """One webhook event shaped like LINE's (see the platform's reference), from ``user``.

    ``source`` other than ``"user"`` is a group or room (``groupId``/``roomId``);
    ``user=None`` leaves the ``userId`` out, as LINE does for some group events.
    """
    origin: dict[str, Any] = {"type": source}
    if source != "user":
        origin[f"{source}Id"] = "C" + "e5" * 16
    if user is not None:
        origin["userId"] = user
    return {
        "type": kind,
        "mode": "active",
        "timestamp": timestamp,
        "source": origin,
        "webhookEventId": event_id or secrets.token_hex(13).upper(),
        "deliveryContext": {"isRedelivery": redelivery},
        "replyToken": uuid.uuid4().hex,
        **content,
    }


def signed_line_tap(
    secret: str, user_id: str, request_id: str, action: str = "approve"
) -> tuple[bytes, dict[str, str]]:
    """A LINE webhook body with one postback tap, and its ``X-Line-Signature`` headers."""
    return _signed(secret, "postback", user_id, postback={"data": f"v=1&a={action}&r={request_id}"})


def signed_line_text(secret: str, user_id: str, text: str) -> tuple[bytes, dict[str, str]]:
    """A LINE webhook body with one text message the user typed, signed."""
    message = {
        "id": str(uuid.uuid4().int % 10**18),
        "type": "text",
        "quoteToken": "q",
        "text": text,
    }
    return _signed(secret, "message", user_id, message=message)


def _signed(secret: str, kind: str, user_id: str, **content: Any) -> tuple[bytes, dict[str, str]]:
    event = line_event(kind, user_id, timestamp=int(time.time() * 1000), **content)
    body = line_body(event)
    return body, line_headers(secret, body)


def slack_form(payload: Any) -> bytes:
    """``payload=<url-quoted JSON>``: how Slack posts an interaction."""
    return b"payload=" + quote(json.dumps(payload), safe="").encode()


def slack_headers(secret: str, body: bytes, timestamp: int | str) -> dict[str, str]:
    """The headers Slack sends with a form ``body``: its v0 signature at ``timestamp``."""
    base = f"v0:{timestamp}:".encode() + body
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(timestamp),
        "X-Slack-Signature": "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest(),
    }


def signed_slack_tap(
    secret: str, user_id: str, request_id: str, *, channel: str, action: str = "approve"
) -> tuple[bytes, dict[str, str]]:
    """A Slack ``block_actions`` interaction (form-encoded ``payload=``), signed now.

    Each call is a new click: its own ``trigger_id`` and ``action_ts``.
    """
    now = time.time()
    payload = {
        "type": "block_actions",
        "user": {"id": user_id, "team_id": SLACK_TEAM},
        "team": {"id": SLACK_TEAM},
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "container": {"type": "message", "channel_id": channel, "message_ts": f"{now:.6f}"},
        "channel": {"id": channel},
        "actions": [
            {
                "action_id": f"tapgate_{action}",
                "value": request_id,
                "type": "button",
                "action_ts": f"{now:.6f}",
            }
        ],
    }
    body = slack_form(payload)
    return body, slack_headers(secret, body, int(now))
