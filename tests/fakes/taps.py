"""What the platforms send when an approver taps, signed for real, plus a free port.

Shared by the multi-process tests and the benchmarks, so every harness signs
taps the way LINE does (over the exact bytes sent) and nobody reimplements it.
"""

from __future__ import annotations

import json
import socket
import time
import uuid

from tapgate.webhooks._line_signature import line_signature

__all__ = ["free_port", "signed_line_tap", "signed_line_text"]


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
