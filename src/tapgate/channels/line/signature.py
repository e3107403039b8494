"""LINE's webhook signature: a pure check over the raw request bytes.

LINE signs every webhook call with ``X-Line-Signature`` =
base64(HMAC-SHA256(channel secret, raw body)). The check runs on the bytes as
they arrived, before anything parses them: a signature computed over
re-serialised JSON would no longer say what LINE sent. The scheme has no
timestamp, so there is no replay window to check; replays are absorbed by
deduplicating ``webhookEventId`` and by the request lifecycle (a decided
request never changes again).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

__all__ = ["line_signature", "verify_signature"]


def line_signature(secret: bytes, body: bytes) -> str:
    """The ``X-Line-Signature`` value LINE sends for ``body``."""
    digest = hmac.new(secret, body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verify_signature(secret: bytes, body: bytes, signature: str | None) -> bool:
    """True when ``signature`` is LINE's signature of exactly these ``body`` bytes.

    Compared in constant time (``hmac.compare_digest``) so response timing
    reveals nothing about how close a forged signature came. A missing or
    non-ASCII header value is simply wrong: it can never be a base64 digest,
    and ``compare_digest`` would raise on non-ASCII text rather than say no.
    """
    if not secret or not signature or not signature.isascii():
        return False
    expected = line_signature(secret, body).encode("ascii")
    return hmac.compare_digest(expected, signature.encode("ascii"))
