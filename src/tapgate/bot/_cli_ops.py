"""Operator commands of the ``tapgate`` CLI: serve, pending, resolve, grants, audit.

They open the same store the server uses (SQLite file or PostgreSQL), so an
operator can act while the server runs; a decision made here reaches a
waiting agent through the server's reconciliation sweep (or NOTIFY on
PostgreSQL). ``resolve`` is the break-glass path: it skips the per-request
approver check, and the audit line says so.

pending, resolve, grants and audit never create or migrate a database: a
SQLite file that does not exist, or a schema not at the head revision (the
check ``/readyz`` makes), is an error naming the problem, so a mistyped path
does not quietly print "no pending requests" and a newer CLI does not upgrade
the schema under a running older server. ``tapgate db upgrade`` does both.
A database that cannot be reached or used (connection refused, not a SQLite
file, an Alembic revision this tapgate does not know) is reported as one line
by :func:`store_errors`, with the password masked in the URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from tapgate.bot._config_models import display_url
from tapgate.bot.config import Config
from tapgate.core.gate import Gate
from tapgate.core.models import AuditEntry, Grant, Request
from tapgate.core.policy import Policy
from tapgate.core.store import Store
from tapgate.core.store.engine import current_revision, head_revision, normalize_url
from tapgate.errors import ConfigError, StoreError

__all__ = [
    "audit",
    "grants_list",
    "grants_revoke",
    "pending",
    "resolve",
    "serve",
    "store_errors",
]

T = TypeVar("T")
Loader = Callable[[str | None], Config]


def _with_gate(config: Config, work: Callable[[Gate], Awaitable[T]]) -> T:
    async def run() -> T:
        store = await _open_existing(config.store_url)
        try:
            gate = Gate(
                store=store, policy=Policy(config.policy_spec()), directory=config.directory()
            )
            return await work(gate)
        finally:
            await store.close()

    with store_errors(config.store_url):
        return asyncio.run(run())


async def _open_existing(url: str) -> Store:
    """The store at ``url`` as it is: never created, never migrated.

    Raises :class:`StoreError` when the SQLite file does not exist or the
    schema is not at this tapgate's head revision.
    """
    try:
        path = _sqlite_file(make_url(normalize_url(url)))
        if path is not None and not path.exists():
            raise StoreError(
                f"database not found: no SQLite file at {path.absolute()} "
                "(check store.url; `tapgate db upgrade` creates it)"
            )
        store = await Store.open(url, migrate=False)
    except (SQLAlchemyError, *_BAD_URL) as exc:
        raise _unusable(url, exc) from exc
    try:
        # What Store.is_current() checks for /readyz, but keeping the error
        # (unreachable, not a database) and the revision for the message.
        # The first query is where the driver reads the URL's options.
        _check_revision(url, await store.runner.read(current_revision))
    except BaseException as exc:
        await store.close()
        if isinstance(exc, _BAD_URL):
            raise _unusable(url, exc) from exc
        raise
    return store


# What a driver raises for a URL it cannot use: a port that is not a number or
# out of range, an option it does not take (libpq's ``sslmode`` to asyncpg).
_BAD_URL = (ValueError, TypeError, OverflowError)


def _unusable(url: str, exc: BaseException) -> StoreError:
    return StoreError(f"cannot use the database URL {display_url(url)}: {exc}")


def _check_revision(url: str, revision: str | None) -> None:
    head = head_revision()
    if revision is None:
        raise StoreError(
            f"database at {display_url(url)} is not migrated (run `tapgate db upgrade`)"
        )
    if revision != head:
        raise StoreError(
            f"database at {display_url(url)} is at revision {revision}, "
            f"but this tapgate expects {head} (run `tapgate db upgrade`, "
            "or use the newer tapgate that migrated it)"
        )


def _sqlite_file(url: URL) -> Path | None:
    """The file a SQLite URL names; ``None`` for PostgreSQL, in-memory and ``file:`` URIs."""
    if url.get_backend_name() != "sqlite" or url.query.get("uri"):
        return None
    if not url.database or url.database == ":memory:":
        return None
    return Path(url.database)


@contextlib.contextmanager
def store_errors(url: str) -> Iterator[None]:
    """Turn a database failure into a one-line :class:`StoreError` naming it.

    Driver and network errors (SQLAlchemy, asyncpg, ``OSError``) and Alembic
    errors become a message with ``url``, its password masked, and the
    driver's reason; tapgate's own errors pass through.
    """
    shown = display_url(url)
    try:
        yield
    except OSError as exc:  # refused, unresolvable host, timeout; a SQLite directory denied
        verb = "open" if shown.startswith("sqlite") else "reach"
        raise StoreError(f"cannot {verb} the database at {shown}: {_reason(exc)}") from exc
    except (CommandError, RevisionError) as exc:
        raise StoreError(
            f"cannot migrate the database at {shown}: {_reason(exc)} "
            f"(this tapgate knows revisions up to {head_revision()})"
        ) from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"database error at {shown}: {_reason(exc)}") from exc
    except Exception as exc:
        # SQLAlchemy passes some of asyncpg's connect errors through unwrapped.
        # Matched by module, not imported: `tapgate serve` on SQLite imports
        # this module and should not load a PostgreSQL driver (~3 MB) for it.
        if not type(exc).__module__.startswith("asyncpg"):
            raise
        raise StoreError(f"database error at {shown}: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    """The driver's own message, on one line."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
        if exc.__cause__ is not None:  # an async driver's error, adapted by SQLAlchemy
            exc = exc.__cause__
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


def serve(args: argparse.Namespace, config: Config) -> int:
    """Run the server until SIGTERM / SIGINT, then shut down gracefully."""
    from aiohttp import web

    from tapgate.bot.access_log import AccessLogger
    from tapgate.bot.app import build_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    host = args.host or config.server.host
    port = args.port or config.server.port
    web.run_app(
        build_app(config),
        host=host,
        port=port,
        shutdown_timeout=15,
        access_log_class=AccessLogger,
        print=lambda text: print(text, flush=True),
    )
    return 0


def pending(args: argparse.Namespace, config: Config) -> int:
    """List requests waiting for a human."""
    found = _with_gate(config, lambda g: g.store.list_requests(status="pending", limit=args.limit))
    if args.json:
        for request in found:
            print(json.dumps(_request_json(request)))
        return 0
    if not found:
        print("no pending requests")
    now = datetime.now(UTC)
    for r in found:
        left = max(0, int((r.expires_at - now).total_seconds()))
        print(
            f"{r.id}  {r.agent}  {r.tool}  expires in {left}s  "
            f"approvers: {', '.join(r.approvers) or '(none)'}  rule: {r.rule}"
        )
    return 0


def resolve(args: argparse.Namespace, config: Config) -> int:
    """Decide a request by hand, as a configured approver, audited as break-glass."""
    if config.directory().get(args.as_) is None:
        raise ConfigError("approvers", f"no approver named {args.as_!r}")
    verdict: Literal["approve", "deny"] = "approve" if args.verdict == "approve" else "deny"

    async def work(gate: Gate) -> Request:
        return await gate.resolve(
            args.id,
            verdict,
            by=args.as_,
            reason=args.reason,
            scope=args.scope,
            authorize=False,
            detail={"via": "cli"},
        )

    request = _with_gate(config, work)
    print(f"{request.status} by {request.resolved_by}: {request.tool} ({request.id})")
    return 0


def grants_list(args: argparse.Namespace, config: Config) -> int:
    """List grants (active ones unless --all)."""
    found = _with_gate(config, lambda g: g.grants(active_only=not args.all))
    for grant in found:
        if args.json:
            print(json.dumps(_grant_json(grant)))
        else:
            state = "revoked" if grant.revoked_at else "active"
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
    if not _with_gate(config, lambda g: g.revoke_grant(args.id, by=args.as_)):
        raise ConfigError("", f"no active grant with id {args.id!r}")
    print(f"revoked {args.id}")
    return 0


def audit(args: argparse.Namespace, config: Config) -> int:
    """Print the audit log, oldest first."""
    since = _parse_since(args.since) if args.since else None
    entries = _with_gate(config, lambda g: g.store.audit_log(since=since, request_id=args.request))
    for entry in entries:
        if args.format == "jsonl":
            print(json.dumps(_audit_json(entry)))
        else:
            print(
                f"{entry.at:%Y-%m-%d %H:%M:%S}  {entry.event:<9} {entry.actor:<16} "
                f"{entry.request_id or '-'}  {json.dumps(dict(entry.detail), sort_keys=True)}"
            )
    return 0


def _parse_since(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError("--since", f"expected an ISO 8601 time, got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


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
    }


def _audit_json(e: AuditEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "at": e.at.isoformat(),
        "event": e.event,
        "request_id": e.request_id,
        "actor": e.actor,
        "detail": dict(e.detail),
    }
