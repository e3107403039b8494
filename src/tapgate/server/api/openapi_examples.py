"""The example of each schema in the OpenAPI document (:mod:`tapgate.server.api.openapi`).

Kept apart from the document builder because it is data, not logic: a client
author reads these as the canonical request and response bodies, and the
OpenAPI test validates every one against its pydantic model, so an example
cannot drift from what the API accepts and returns.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXAMPLES"]

EXAMPLES: dict[str, dict[str, Any]] = {
    "ToolCallIn": {
        "tool": "deploy",
        "arguments": {"service": "web", "env": "prod"},
        "session": "chat-42",
        "wait": 30,
    },
    "CancelIn": {"reason": "the user changed their mind"},
    "ToolCallOut": {
        "id": "kq3V2m9yJ0x8b7cP1sQ4Ag",
        "decision": "allow",
        "status": "approved",
        "reason": "approved by alice",
        "decided_by": "alice",
        "source": "approver",
        "rule": "policy.rules[0]",
        "reused": False,
        "tool": "deploy",
        "session": "chat-42",
        "created_at": "2026-01-01T12:00:00Z",
        "expires_at": "2026-01-01T12:10:00Z",
        "resolved_at": "2026-01-01T12:00:21Z",
        "approvers": ["alice", "bob"],
        "edited": True,
        "arguments": {"service": "web", "env": "staging"},
        "scope": "once",
    },
    "ErrorOut": {
        "error": {
            "code": "invalid_body",
            "message": "Input should be a valid string",
            "path": "tool",
        }
    },
    "EventOut": {
        "kind": "resolved",
        "request_id": "kq3V2m9yJ0x8b7cP1sQ4Ag",
        "status": "approved",
        "decision": "allow",
        "tool": "deploy",
        "arguments": {"service": "web", "env": "prod", "token": "********"},
        "risk": "write",
        "agent": "ci-bot",
        "session": "chat-42",
        "batch_id": None,
        "at": "2026-01-01T12:00:21Z",
        "outcome": "approved_session",
        "decided_by": "alice",
        "reason": "approved by alice",
        "channel": None,
        "approver": None,
        "scope": "session",
    },
    "SandboxOut": {
        "tool": "deploy",
        "network": False,
        "writable": ["/srv/app/releases", "."],
        "hidden": ["/root/.ssh"],
        "source": "policy.tools.deploy.sandbox",
    },
    "BatchCallIn": {"tool": "read_file", "arguments": {"path": "README.md"}},
    "BatchIn": {
        "calls": [
            {"tool": "read_file", "arguments": {"path": "README.md"}},
            {"tool": "deploy", "arguments": {"service": "web", "env": "prod"}},
        ],
        "session": "chat-42",
        "wait": 30,
    },
    "BatchOut": {
        "id": "Zt8cM1qV0aY7dN3bK5wL2g",
        "status": "pending",
        "calls": [
            {
                "id": None,
                "decision": "allow",
                "status": "allowed",
                "reason": "read_only tools are allowed",
                "decided_by": "policy.tools.read_file",
                "source": "policy",
                "rule": "policy.tools.read_file",
                "reused": False,
                "tool": "read_file",
                "session": "chat-42",
                "created_at": None,
                "expires_at": None,
                "resolved_at": None,
                "approvers": [],
            },
            {
                "id": "kq3V2m9yJ0x8b7cP1sQ4Ag",
                "decision": "pending",
                "status": "pending",
                "reason": "deploys need a human",
                "decided_by": None,
                "source": None,
                "rule": "policy.rules[0]",
                "reused": False,
                "tool": "deploy",
                "session": "chat-42",
                "created_at": "2026-01-01T12:00:00Z",
                "expires_at": "2026-01-01T12:10:00Z",
                "resolved_at": None,
                "approvers": ["alice", "bob"],
                "batch_id": "Zt8cM1qV0aY7dN3bK5wL2g",
            },
        ],
    },
}
"""One example per schema; the OpenAPI test validates each against its model."""
