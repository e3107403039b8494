"""Discord's interaction signature: Ed25519 over the timestamp and the raw body, checked first.

Discord signs every interaction it POSTs to the Interactions Endpoint URL:
``X-Signature-Ed25519`` is the hex Ed25519 signature, under the application's
key pair, of ``X-Signature-Timestamp`` followed by the raw body bytes. The
check runs on the bytes as they arrived, before any JSON is read, and a
failure is a 401: Discord probes endpoints with invalid signatures and
removes one that accepts them.

The signature says nothing about age, so the timestamp must also be within
:data:`SIGNATURE_WINDOW` of the injected clock: a recorded interaction
replayed later is refused even though its signature is genuine (and a press
that old could not be answered inside Discord's 3-second window anyway).
"""

from __future__ import annotations

import re
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "SIGNATURE_HEADER",
    "SIGNATURE_WINDOW",
    "TIMESTAMP_HEADER",
    "SignatureCheck",
    "Verifier",
]

SIGNATURE_HEADER = "X-Signature-Ed25519"
TIMESTAMP_HEADER = "X-Signature-Timestamp"
SIGNATURE_WINDOW = 60.0
"""Seconds a timestamp may be from now: room for clock skew, none for a replay."""
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"[0-9a-fA-F]{128}")

SignatureCheck = Literal["ok", "missing", "stale", "mismatch"]


class Verifier:
    """Checks interactions against one application's public key (64 hex digits)."""

    def __init__(self, public_key_hex: str) -> None:
        self._key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))

    def check(
        self, body: bytes, *, timestamp: str | None, signature: str | None, now: float
    ) -> SignatureCheck:
        """Why a request is or is not Discord's and fresh, judged on the raw bytes at ``now``.

        The timestamp must be plain ASCII digits (``int()`` would also take
        ``" 1_7"`` or other scripts' digits) and the signature 128 hex
        digits, before any cryptography runs on them.
        """
        if not timestamp or not signature:
            return "missing"
        if _TIMESTAMP.fullmatch(timestamp) is None or _SIGNATURE.fullmatch(signature) is None:
            return "mismatch"
        try:
            self._key.verify(bytes.fromhex(signature), timestamp.encode("ascii") + body)
        except InvalidSignature:
            return "mismatch"
        # Judged after the signature: "stale" is then a genuine but old request.
        return "stale" if abs(now - int(timestamp)) > SIGNATURE_WINDOW else "ok"
