"""The operator's database: opened as it is, and its failures reported as one line.

``pending``, ``resolve``, ``grants`` and ``audit`` open the same store the
server uses, but never create or migrate it: a SQLite file that does not
exist, or a schema not at the head revision (the check ``/readyz`` makes), is
an error naming the problem, so a mistyped path does not quietly print "no
pending requests" and a newer CLI does not upgrade the schema under a running
older server. A database that cannot be reached or used (connection refused,
not a SQLite file, an Alembic revision this tapgate does not know) is
reported by :func:`store_errors` as one line, with the password masked in the
URL.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from tapgate.config import Config, display_url
from tapgate.errors import StoreError
from tapgate.gate.gate import Gate
from tapgate.policy.engine import Policy
from tapgate.store import Store
from tapgate.store.engine import current_revision, head_revision, normalize_url

__all__ = ["open_existing", "store_errors", "with_gate"]

T = TypeVar("T")


def with_gate(config: Config, work: Callable[[Gate], Awaitable[T]]) -> T:
    """Run ``work`` against a gate over the config's existing store, then close it."""

    async def run() -> T:
        store = await open_existing(config.store_url)
        try:
            gate = Gate(
                store=store, policy=Policy(config.policy_spec()), directory=config.directory()
            )
            return await work(gate)
        finally:
            await store.close()

    with store_errors(config.store_url):
        return asyncio.run(run())


async def open_existing(url: str) -> Store:
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
    except SQLAlchemyError as exc:
        raise StoreError(f"database error at {shown}: {_reason(exc)}") from exc
    except Exception as exc:
        # Matched by module, not imported. Alembic's CommandError and
        # RevisionError: the operator commands that only read never load
        # Alembic (a third of their start-up). asyncpg's connect errors, which
        # SQLAlchemy passes through unwrapped: `tapgate serve` on SQLite
        # imports this module and should not load a PostgreSQL driver for it.
        origin = type(exc).__module__
        if any((c.__module__, c.__name__) in _ALEMBIC_ERRORS for c in type(exc).__mro__):
            raise StoreError(
                f"cannot migrate the database at {shown}: {_reason(exc)} "
                f"(this tapgate knows revisions up to {head_revision()})"
            ) from exc
        if not origin.startswith("asyncpg"):
            raise
        raise StoreError(f"database error at {shown}: {_reason(exc)}") from exc


_ALEMBIC_ERRORS = frozenset(
    {("alembic.script.revision", "RevisionError"), ("alembic.util.exc", "CommandError")}
)
"""Alembic's errors about revisions (``RevisionError`` and its subclasses) and its commands."""


def _reason(exc: BaseException) -> str:
    """The driver's own message, on one line."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
        if exc.__cause__ is not None:  # an async driver's error, adapted by SQLAlchemy
            exc = exc.__cause__
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__
