"""Shared fixtures: a manual clock, a real SQLite store, and a loopback-only network."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tapgate.gate.clock import ManualClock
from tapgate.store import Store
from tests.bytecode import cache_compiled_modules
from tests.fakes.taps import ReservedPort
from tests.memory import before_collecting, forget_served_apps, freeze_collected
from tests.sql_cache import share_compiled_statements
from tests.suites import (
    has_postgresql,
    is_controller,
    mark_postgresql,
    mark_slow_folders,
    skips_collecting,
    slow_first,
    start_postgresql,
    start_shared_postgresql,
    stop_postgresql,
    stop_shared_postgresql,
)
from tests.templates import admin, copy_sqlite, database_url, migrated_pg, migrated_sqlite
from tests.tls import share_line_sdk_tls_context


def _loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX paths
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk to loopback only: any other connection attempt fails loudly."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _loopback(address):
            raise ConnectionRefusedError(f"tests may not connect to {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _loopback(address):
            raise ConnectionRefusedError(f"tests may not connect to {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound here, never listening.

    A port ``free_port()`` found closed can be taken a moment later by another
    worker's server (seen: a hook test's "unreachable" server answered as a
    fake Slack API). Held bound, nobody else can listen on it.
    """
    reserved = ReservedPort()
    try:
        yield reserved.port
    finally:
        reserved.sock.close()


@pytest.fixture
def clock() -> ManualClock:
    """Time that moves only when a test says so."""
    return ManualClock()


def skip_without_postgresql() -> None:
    """Skip (with the one-line reason) where no PostgreSQL server binaries exist; CI has them."""
    if not has_postgresql():
        pytest.skip("no PostgreSQL server binaries (initdb) on this machine")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server for the session: $TAPGATE_TEST_PG_URL, or one started here."""
    url = os.environ.get("TAPGATE_TEST_PG_URL")
    if url:
        yield url
        return
    skip_without_postgresql()
    url, data = start_postgresql()
    try:
        yield url
    finally:
        stop_postgresql(data)


def pytest_configure(config: pytest.Config) -> None:
    start_shared_postgresql(config)
    cache_compiled_modules(config)
    if not is_controller(config):  # the processes that run tests
        before_collecting()
        share_line_sdk_tls_context()
        share_compiled_statements()


def pytest_collection_finish(session: pytest.Session) -> None:
    freeze_collected()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After each test and its fixtures, let its apps go (tests/memory.py)."""
    forget_served_apps()


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_shared_postgresql()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_slow_folders(items)
    mark_postgresql(items)
    slow_first(items)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m "not slow"`` the slow folders are not imported (see tests/suites.py)."""
    return True if skips_collecting(collection_path, config) else None


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database per test: a SQLite file, or a new PostgreSQL database.

    Empty, unless the test uses ``store`` or ``migrated_db_url``: then a copy
    of this process's migrated template (tests/templates.py), at the head.
    """
    migrated = not MIGRATED.isdisjoint(request.fixturenames)
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'tapgate.db'}"
        if migrated:
            copy_sqlite(request.getfixturevalue("sqlite_template"), url)
        yield url
        return
    template = request.getfixturevalue("pg_template") if migrated else None
    yield from _pg_database(request.getfixturevalue("pg_server"), template)


MIGRATED = frozenset({"store", "migrated_db_url"})
"""Fixtures whose tests get ``db_url`` migrated already (a server under test skips Alembic)."""


@pytest.fixture
def migrated_db_url(db_url: str) -> str:
    """``db_url`` at the head revision, copied from the template: for an app under test."""
    return db_url


@pytest.fixture
def migrated_sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A SQLite file at the head revision, copied from the template (the SQLite-only app tests)."""
    url = f"sqlite:///{tmp_path / 'tapgate.db'}"
    copy_sqlite(sqlite_template, url)
    return url


@pytest.fixture(scope="session")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder all of this run's processes share: the workers' temporary folders' parent."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This process's migrated SQLite file, copied for each test's ``store``."""
    return migrated_sqlite(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[str]:
    """This process's migrated PostgreSQL database, the template of each test's ``store``."""
    name = migrated_pg(pg_server)
    try:
        yield name
    finally:
        asyncio.run(admin(pg_server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database, for what only PostgreSQL can do (several replicas)."""
    yield from _pg_database(pg_server)


def _pg_database(server: str, template: str | None = None) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    asyncio.run(admin(server, f'CREATE DATABASE "{name}"{copy}'))
    try:
        yield database_url(server, name)
    finally:
        asyncio.run(admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated store on ``db_url`` (SQLite or PostgreSQL), copied from a template."""
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()
