"""Opening the database: URL normalisation, SQLite pragmas, Alembic migrations.

SQLite is the default and needs nothing installed: a file in WAL mode, one
connection per process (SQLite serialises writers anyway; one connection turns
"database is locked" into an orderly asyncio queue), ``BEGIN IMMEDIATE`` so a
transaction takes the write lock up front instead of failing on upgrade, and a
busy timeout for the CLI and server sharing a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tapgate.errors import StoreError

__all__ = ["connect", "current_revision", "head_revision", "normalize_url", "upgrade"]

_MIGRATIONS = Path(__file__).parent / "migrations"


def normalize_url(url: str) -> str:
    """Map ``sqlite:///x.db`` / ``postgresql://…`` to their asyncio drivers."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise StoreError(f"invalid store URL: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    elif backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+asyncpg")
    else:
        raise StoreError(f"unsupported store URL scheme {parsed.drivername!r}")
    return parsed.render_as_string(hide_password=False)


def connect(url: str, **engine_options: Any) -> AsyncEngine:
    """An async engine for ``url`` with tapgate's per-backend settings."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, pool_size=1, max_overflow=0, **engine_options)
        _sqlite_hooks(engine)
        return engine
    options: dict[str, Any] = {"pool_size": 10, "max_overflow": 10, "pool_pre_ping": True}
    options.update(engine_options)
    return create_async_engine(url, **options)


def _sqlite_hooks(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
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

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _alembic_config(connection: Connection | None = None) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str | None:
    """The newest migration shipped with this version of tapgate."""
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


async def current_revision(engine: AsyncEngine) -> str | None:
    """The migration the database is at (``None`` for an empty database)."""
    async with engine.connect() as conn:
        return await conn.run_sync(lambda c: MigrationContext.configure(c).get_current_revision())


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` in one transaction."""

    def _run(connection: Connection) -> None:
        command.upgrade(_alembic_config(connection), revision)

    async with engine.begin() as conn:
        await conn.run_sync(_run)
