"""Operator commands of the ``tapgate`` CLI: db upgrade, pending, resolve, grants.

They open the same store the server uses (SQLite file or PostgreSQL), so an
operator can act while the server runs; a decision made here reaches a
waiting agent through the server's reconciliation sweep (or NOTIFY on
PostgreSQL). ``resolve`` is the break-glass path: it skips the per-request
approver check, and the audit line says so.

pending, resolve, grants and audit (:mod:`~tapgate.cli.audit`) never
create or migrate a database (:mod:`tapgate.cli.database` opens it as it
is); ``tapgate db upgrade`` does both. All of them load only the config's
``store`` section and approver names (``load_store_config``), so they run
where the chat secrets' variables are unset. ``serve`` is
:mod:`~tapgate.cli.serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from typing import Any, Literal

from tapgate.cli.commands import UsageError
from tapgate.cli.database import store_errors, with_gate
from tapgate.cli.text import format_time, paint, readable_duration
from tapgate.config import Config
from tapgate.decisions.texts import NOT_REMEMBERED
from tapgate.errors import ConfigError
from tapgate.gate.gate import Gate
from tapgate.gate.models import Grant, Request
from tapgate.store import Store
from tapgate.store.engine import current_revision

__all__ = [
    "db_upgrade",
    "grants_list",
    "grants_revoke",
    "pending",
    "resolve",
]


def db_upgrade(url: str) -> int:
    """Create the database at ``url`` if needed and migrate it to the head revision."""

    async def run() -> str | None:
        store = await Store.open(url)
        try:
            return await store.run(current_revision)
        finally:
            await store.close()

    with store_errors(url):
        revision = asyncio.run(run())
    print(f"database at revision {revision}")
    return 0


def pending(args: argparse.Namespace, config: Config) -> int:
    """List requests waiting for a human."""
    found = with_gate(config, lambda g: g.list_requests(status="pending", limit=args.limit))
    if args.json:
        for request in found:
            print(json.dumps(_request_json(request)))
        return 0
    if not found:
        print("no pending requests")
    now = datetime.now(UTC)
    for r in found:
        left = readable_duration((r.expires_at - now).total_seconds())
        print(
            f"{paint(r.id, 'bold')}  {r.agent}  {r.tool}  "
            f"expires in {left} ({format_time(r.expires_at)})  "
            f"approvers: {', '.join(r.approvers) or '(none)'}  rule: {r.rule}"
        )
    return 0


def resolve(args: argparse.Namespace, config: Config) -> int:
    """Decide a request by hand, as a configured approver, audited as break-glass."""
    if config.directory().get(args.as_) is None:
        raise ConfigError("approvers", f"no approver named {args.as_!r}")
    verdict: Literal["approve", "deny"] = "approve" if args.verdict == "approve" else "deny"

    from tapgate.decisions.remember import reach  # the policy's offer: only this command needs it

    async def work(gate: Gate) -> Request:
        # A remembered approval is what a card could offer, for as long: break-glass
        # skips the approver check, never the policy's remember / always_ttl / always_uses.
        far = await reach(gate, args.id, args.scope if verdict == "approve" else "once")
        if far.refused:
            raise UsageError(f"--scope {args.scope}: {NOT_REMEMBERED}")
        return await gate.resolve(
            args.id,
            verdict,
            by=args.as_,
            reason=args.reason,
            scope=args.scope,
            grant_ttl=far.ttl,
            grant_uses=far.uses,
            authorize=False,
            detail={"via": "cli"},
        )

    request = with_gate(config, work)
    print(f"{request.status} by {request.resolved_by}: {request.tool} ({request.id})")
    return 0


def grants_list(args: argparse.Namespace, config: Config) -> int:
    """List grants (active ones unless --all)."""
    found = with_gate(config, lambda g: g.grants(active_only=not args.all))
    for grant in found:
        if args.json:
            print(json.dumps(_grant_json(grant)))
        else:
            state = "revoked" if grant.revoked_at else "active"
            if grant.uses_left is not None and not grant.revoked_at:
                state = f"{state}, {grant.uses_left} use{'s' if grant.uses_left != 1 else ''} left"
            print(
                f"{grant.id}  {grant.scope}  {grant.agent}"
                f"{'/' + grant.session if grant.session else ''}  {grant.tool}  "
                f"by {grant.created_by}  {state}"
            )
    if not found and not args.json:
        print("no grants")
    return 0


def grants_revoke(args: argparse.Namespace, config: Config) -> int:
    """Revoke a grant; later matching calls ask again."""
    if not with_gate(config, lambda g: g.revoke_grant(args.id, by=args.as_)):
        raise ConfigError("", f"no active grant with id {args.id!r}")
    print(f"revoked {args.id}")
    return 0


def _request_json(r: Request) -> dict[str, Any]:
    return {
        "id": r.id,
        "agent": r.agent,
        "session": r.session,
        "tool": r.tool,
        "rule": r.rule,
        "approvers": list(r.approvers),
        "status": r.status,
        "created_at": r.created_at.isoformat(),
        "expires_at": r.expires_at.isoformat(),
    }


def _grant_json(g: Grant) -> dict[str, Any]:
    return {
        "id": g.id,
        "scope": g.scope,
        "agent": g.agent,
        "session": g.session,
        "tool": g.tool,
        "fingerprint": g.fingerprint,
        "created_by": g.created_by,
        "created_at": g.created_at.isoformat(),
        "expires_at": g.expires_at.isoformat() if g.expires_at else None,
        "revoked_at": g.revoked_at.isoformat() if g.revoked_at else None,
        "uses_left": g.uses_left,
    }
