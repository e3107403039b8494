"""Opening the database: URL normalisation, SQLite pragmas, running transactions, migrations.

Every store operation is one synchronous SQLAlchemy Core function over a
``Connection``, run in one transaction by a *runner*:

- SQLite (the default, ``sqlite:///file.db``): the stdlib driver on one
  dedicated thread, so a whole transaction costs one hop between the event loop
  and the thread. aiosqlite (``sqlite+aiosqlite:///``, still supported) hops
  several times per statement (docs/benchmarks.md has the figures). Jobs
  queued while the thread is busy share one transaction and one commit
  (group commit, see :class:`ThreadRunner`).
  One connection and one thread per process also mean SQLite's single writer
  is an orderly queue instead of "database is locked" errors.
- PostgreSQL (``postgresql://``): asyncpg through SQLAlchemy's async engine and
  ``AsyncConnection.run_sync``, so the same functions run natively async.

SQLite runs in WAL mode with ``synchronous=NORMAL`` (durable across process
crashes; the last transactions may be lost on power failure), ``BEGIN
IMMEDIATE`` so a transaction takes the write lock up front, and a busy timeout
for the CLI and the server sharing one file.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tapgate.errors import StoreError
from tapgate.store.audit_chain import canonical_time, link

if TYPE_CHECKING:  # Alembic is loaded to migrate, not to read which revision is current
    from alembic.config import Config as AlembicConfig

__all__ = [
    "AsyncRunner",
    "Runner",
    "ThreadRunner",
    "connect",
    "current_revision",
    "head_revision",
    "normalize_url",
    "upgrade",
]

T = TypeVar("T")
_MIGRATIONS = Path(__file__).parent / "migrations"


def normalize_url(url: str) -> str:
    """Pick the driver: ``sqlite:///`` → stdlib sqlite3, ``postgresql://`` → asyncpg."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise StoreError(f"invalid store URL: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.get_driver_name() not in ("pysqlite", "aiosqlite"):
            raise StoreError(f"unsupported SQLite driver {parsed.drivername!r}")
    elif backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+asyncpg")
    else:
        raise StoreError(f"unsupported store URL scheme {parsed.drivername!r}")
    return parsed.render_as_string(hide_password=False)


class Runner(Protocol):
    """Runs one function in one transaction, off or on the event loop as the driver needs."""

    dialect: str

    async def run(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(connection)`` in a transaction; commit if it returns, roll back if it raises."""
        ...

    async def read(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` for reading (no write lock on SQLite)."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...


@dataclass(slots=True)
class _Job:
    """One transaction function waiting for the database thread, and where to send its result."""

    fn: Callable[[Connection], Any]
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


def _settle(outcomes: list[tuple[_Job, Any, BaseException | None]]) -> None:
    for job, value, error in outcomes:
        if job.future.done():
            continue
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(value)


def _deliver(outcomes: list[tuple[_Job, Any, BaseException | None]]) -> None:
    """Hand results back with one wake-up per event loop, not one per job."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Job, Any, BaseException | None]]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome[0].loop, []).append(outcome)
    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop closed while we worked
            loop.call_soon_threadsafe(_settle, items)


class ThreadRunner:
    """A sync engine driven by one dedicated thread, with group commit.

    The thread takes every job queued since its last round and runs them one
    after another in one transaction with one commit, the costly part on
    SQLite; no job learns its result before that commit succeeded. Jobs run
    sequentially, so compare-and-set semantics are exactly those of separate
    transactions. If any job in a batch raises, the batch is rolled back and
    each job is run again in a transaction of its own, so one job's error
    never undoes another's work (jobs are pure database functions, safe to
    run again after a rollback).

    The thread keeps one connection checked out for its whole life: checking
    it out of the pool and back in per batch (with the pool's reset-on-return
    rollback) cost about as much again as the ``BEGIN`` / ``COMMIT`` it
    wraps. A connection SQLAlchemy invalidated (a driver error) is replaced.
    """

    MAX_BATCH = 64

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._conn: Connection | None = None  # owned by the thread
        self._thread = threading.Thread(target=self._work, name="tapgate-db", daemon=True)
        self._thread.start()

    async def run(self, fn: Callable[[Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if not self._thread.is_alive():
            raise StoreError("the store is closed")
        self._jobs.put(_Job(fn, future, loop))
        return await future

    read = run

    async def close(self) -> None:
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

    def _work(self) -> None:
        running = True
        while running:
            job = self._jobs.get()
            if job is None:
                break
            batch = [job]
            while len(batch) < self.MAX_BATCH:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    running = False
                    break
                batch.append(more)
            self._run_batch(batch)
        try:
            if self._conn is not None:
                self._conn.close()
        finally:
            self.engine.dispose()

    def _run_batch(self, batch: list[_Job]) -> None:
        _deliver(self._outcomes(batch))

    def _outcomes(self, batch: list[_Job]) -> list[tuple[_Job, Any, BaseException | None]]:
        try:
            conn = self._connection()
            with conn.begin():
                values = [job.fn(conn) for job in batch]
        except Exception as exc:
            if len(batch) == 1:
                return [(batch[0], None, exc)]
            return [outcome for job in batch for outcome in self._outcomes([job])]
        return [(job, value, None) for job, value in zip(batch, values, strict=True)]

    def _connection(self) -> Connection:
        conn = self._conn
        if conn is None or conn.invalidated or conn.closed:
            if conn is not None:
                conn.close()
            conn = self._conn = self.engine.connect()
        return conn


class AsyncRunner:
    """An async engine (asyncpg, aiosqlite); sync functions run through ``run_sync``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name

    async def run(self, fn: Callable[[Connection], T]) -> T:
        async with self.engine.begin() as conn:
            return await conn.run_sync(fn)

    async def read(self, fn: Callable[[Connection], T]) -> T:
        # The connection's exit rolls back and returns it to the pool, also
        # when the caller is cancelled (no rollback of our own to interrupt).
        async with self.engine.connect() as conn:
            return await conn.run_sync(fn)

    async def close(self) -> None:
        await self.engine.dispose()


def connect(url: str) -> Runner:
    """A runner for ``url`` with tapgate's per-backend settings."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        return AsyncRunner(
            create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
        )
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    if parsed.get_driver_name() == "aiosqlite":
        async_engine = create_async_engine(url, pool_size=1, max_overflow=0)
        _sqlite_hooks(async_engine.sync_engine)
        return AsyncRunner(async_engine)
    engine = create_engine(
        url, pool_size=1, max_overflow=0, connect_args={"check_same_thread": False}
    )
    _sqlite_hooks(engine)
    return ThreadRunner(engine)


def _sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the driver; we emit BEGIN ourselves.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA busy_timeout=5000",
            "PRAGMA foreign_keys=ON",
        ):
            cursor.execute(pragma)
        cursor.close()
        # SQLite has no SHA-256: the audit chain's trigger calls this one (see
        # migration 0003). A connection without it (the sqlite3 shell) cannot
        # write audit lines, nor change a request's status, which writes one.
        dbapi_connection.create_function(
            "tapgate_audit_link", 7, _sqlite_audit_link, deterministic=True
        )

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN" if conn.info.get("read_only") else "BEGIN IMMEDIATE")


def _sqlite_audit_link(prev_hash: str | None, row_id: int, at: str, *rest: Any) -> str:
    """:func:`~tapgate.store.audit_chain.link` over SQLite's stored text of a UTC time.

    ``rest`` is event, request_id, actor and detail, as the trigger passes them.
    """
    when = datetime.fromisoformat(at)
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when
    return link(prev_hash, row_id, canonical_time(when), *rest)


def _alembic_config(connection: Connection | None = None) -> AlembicConfig:
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


_REVISION_LINE = re.compile(
    r"""^(?P<name>revision|down_revision)(?:: [^=]+)? = ["'](?P<value>[^"']+)["']$""", re.M
)


def head_revision() -> str | None:
    """The newest migration shipped with this version of tapgate.

    Read from the migration files' own ``revision`` and ``down_revision``
    lines: the operator commands check it on every run (``pending``...),
    and loading Alembic's script directory for it was about a third of
    their start-up. Anything but one plain chain (a merge, a second head)
    is left to Alembic; ``tests/store/test_store.py`` holds both answers equal.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (_MIGRATIONS / "versions").glob("*.py"):
        for line in _REVISION_LINE.finditer(path.read_text(encoding="utf-8")):
            (revisions if line["name"] == "revision" else parents).add(line["value"])
    heads = revisions - parents
    if len(heads) == 1 and parents <= revisions:
        return heads.pop()
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The migration the database is at (``None`` for an empty database).

    The ``alembic_version`` table read with one query, as Alembic reads it,
    without loading Alembic; more than one row (branches) is left to Alembic.
    """
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(rows) <= 1:
        return rows[0] if rows else None
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` on ``connection`` (inside the caller's transaction).

    A database already at the shipped head is left without loading Alembic:
    every start opens the store through here, and Alembic's pass that finds
    nothing to do (its config, script directory and environment) cost more
    than the rest of opening a store. Anything else (empty, behind, a
    revision this version does not know) is Alembic's to answer, as before.
    """
    if revision == "head":
        head = head_revision()
        if head is not None and current_revision(connection) == head:
            return
    from alembic import command

    command.upgrade(_alembic_config(connection), revision)
