"""Builders for domain records in tests."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from tapgate.gate.models import Request, args_digest


def make_request(now: datetime, *, ttl: float = 60.0, **overrides: Any) -> Request:
    """A pending request with sensible defaults; keywords override fields."""
    arguments = overrides.pop("arguments", {"target": "prod"})
    fields: dict[str, Any] = {
        "id": secrets.token_urlsafe(16),
        "agent": "agent-1",
        "session": None,
        "tool": "deploy",
        "arguments": arguments,
        "args_digest": args_digest(arguments),
        "fingerprint": "fp",
        "risk": "write",
        "rule": "policy.rules[0]",
        "reason": "deploys need a human",
        "approvers": ("alice", "bob"),
        "status": "pending",
        "created_at": now,
        "expires_at": now + timedelta(seconds=ttl),
    }
    fields.update(overrides)
    return Request(**fields)
