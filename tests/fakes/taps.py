"""What the platforms send when an approver taps, signed for real, plus a free port.

Shared by the multi-process tests and the benchmarks, so every harness signs
taps the way LINE does (over the exact bytes sent) and nobody reimplements it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import time
import uuid
from urllib.parse import quote

from tapgate.webhooks._line_signature import line_signature

__all__ = ["free_port", "signed_line_tap", "signed_line_text", "signed_slack_tap"]


def free_port() -> int:
    """A loopback port nobody listens on right now (for a server in another process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def signed_line_tap(
    secret: str, user_id: str, request_id: str, action: str = "approve"
) -> tuple[bytes, dict[str, str]]:
    """A LINE webhook body with one postback tap, and its ``X-Line-Signature`` headers."""
    return _signed(secret, user_id, {"postback": {"data": f"v=1&a={action}&r={request_id}"}})


def signed_line_text(secret: str, user_id: str, text: str) -> tuple[bytes, dict[str, str]]:
    """A LINE webhook body with one text message the user typed, signed."""
    message = {
        "id": str(uuid.uuid4().int % 10**18),
        "type": "text",
        "quoteToken": "q",
        "text": text,
    }
    return _signed(secret, user_id, {"type": "message", "message": message})


def _signed(secret: str, user_id: str, content: dict[str, object]) -> tuple[bytes, dict[str, str]]:
    event = {
        "type": "postback",
        "mode": "active",
        "timestamp": int(time.time() * 1000),
        "webhookEventId": uuid.uuid4().hex.upper(),
        "replyToken": uuid.uuid4().hex,
        "deliveryContext": {"isRedelivery": False},
        "source": {"type": "user", "userId": user_id},
        **content,
    }
    body = json.dumps({"destination": "Ubot", "events": [event]}).encode()
    headers = {
        "X-Line-Signature": line_signature(secret.encode(), body),
        "Content-Type": "application/json",
    }
    return body, headers


def signed_slack_tap(
    secret: str, user_id: str, request_id: str, *, channel: str, action: str = "approve"
) -> tuple[bytes, dict[str, str]]:
    """A Slack ``block_actions`` interaction (form-encoded ``payload=``), signed now.

    Each call is a new click: its own ``trigger_id`` and ``action_ts``.
    """
    now = time.time()
    payload = {
        "type": "block_actions",
        "user": {"id": user_id, "team_id": "T0TAPGATE"},
        "team": {"id": "T0TAPGATE"},
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
    body = b"payload=" + quote(json.dumps(payload), safe="").encode()
    timestamp = str(int(now))
    base = f"v0:{timestamp}:".encode() + body
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest(),
    }
    return body, headers
