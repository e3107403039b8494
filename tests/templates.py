"""Migrated databases to copy, so a test's store starts at the head revision without Alembic.

Running every migration into a fresh database costs about 0.2 s on SQLite and
1 s on PostgreSQL, and hundreds of tests open a store. Each test process
(each pytest-xdist worker) migrates one database of each kind once, then a
test that wants a migrated store gets a copy: the SQLite file copied into its
own temporary directory, or a PostgreSQL database created with ``TEMPLATE``.
A copy is what the migrations would have produced (they change the schema
only), and ``Store.open`` still checks the revision, finding it at the head.

The template is private to its process: the SQLite file lives in the
session's temporary directory, the PostgreSQL database's name carries the
worker and a random suffix, and nothing connects to it after it is made
(PostgreSQL copies a template only while nobody is connected to it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path

from tapgate.store import Store

__all__ = ["admin", "copy_sqlite", "database_url", "migrated_pg", "migrated_sqlite"]


async def _migrate(url: str) -> None:
    store = await Store.open(url)
    await store.close()


def migrated_sqlite(directory: Path) -> Path:
    """A SQLite file under ``directory`` migrated to the head revision, to copy from."""
    path = directory / "template.db"
    asyncio.run(_migrate(f"sqlite:///{path}"))
    # Closing the last connection checkpoints the write-ahead log into the file.
    assert not path.with_name(path.name + "-wal").exists(), "the template's WAL was not merged"
    return path


def copy_sqlite(template: Path, url: str) -> None:
    """Put a copy of ``template`` at ``url``'s file, unless that file already exists."""
    path = Path(url.removeprefix("sqlite:///"))
    if not path.exists():
        shutil.copyfile(template, path)


def database_url(server: str, name: str) -> str:
    """``server``'s URL naming database ``name`` instead."""
    return server.rsplit("/", 1)[0] + "/" + name


def migrated_pg(server: str) -> str:
    """The name of a new database on ``server`` migrated to the head revision, to copy from."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"template_{worker}_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(server, f'CREATE DATABASE "{name}"'))
    asyncio.run(_migrate(database_url(server, name)))
    return name


async def admin(url: str, statement: str) -> None:
    """Run one statement on ``url`` outside a transaction (CREATE / DROP DATABASE)."""
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://", 1))
    try:
        await conn.execute(statement)
    finally:
        await conn.close()
