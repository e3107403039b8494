"""Slack's request signature: a pure check over the raw bytes, before anything parses them.

A request is Slack's when ``X-Slack-Signature`` is ``v0=`` + the hex
HMAC-SHA256 of ``v0:{timestamp}:{raw body}`` under the app's signing secret,
and the timestamp is within five minutes of the injected clock's now (Slack's
documented replay window). Bolt's own check is not used: it reads
``time.time()`` and raises on a non-numeric timestamp.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Literal

__all__ = [
    "SIGNATURE_HEADER",
    "SIGNATURE_WINDOW",
    "TIMESTAMP_HEADER",
    "SignatureCheck",
    "check_signature",
    "slack_signature",
    "verify_signature",
]

SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_WINDOW = 300.0
"""Seconds a request's timestamp may be from now: Slack's documented replay window."""
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


SignatureCheck = Literal["ok", "missing", "stale", "mismatch"]


def slack_signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` Slack sends: ``v0=`` + hex HMAC-SHA256 of ``v0:{ts}:{body}``."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(secret, base, hashlib.sha256).hexdigest()


def check_signature(
    secret: bytes, body: bytes, *, timestamp: str | None, signature: str | None, now: float
) -> SignatureCheck:
    """Why a request is or is not Slack's, judged on the raw bytes at ``now`` (epoch seconds).

    The timestamp must be plain ASCII digits (``int()`` would also take
    ``" 1_7"`` or Arabic-Indic digits) within :data:`SIGNATURE_WINDOW` of
    ``now``; the signature is compared in constant time, as bytes, because
    ``hmac.compare_digest`` raises on non-ASCII text instead of saying no.
    """
    if not secret or not timestamp or not signature:
        return "missing"
    if _TIMESTAMP.fullmatch(timestamp) is None or not signature.isascii():
        return "mismatch"
    if abs(now - int(timestamp)) > SIGNATURE_WINDOW:
        return "stale"
    expected = slack_signature(secret, timestamp, body).encode("ascii")
    return "ok" if hmac.compare_digest(expected, signature.encode("ascii")) else "mismatch"


def verify_signature(
    secret: bytes, body: bytes, *, timestamp: str | None, signature: str | None, now: float
) -> bool:
    """True when the request is Slack's and fresh (see :func:`check_signature`)."""
    check = check_signature(secret, body, timestamp=timestamp, signature=signature, now=now)
    return check == "ok"
