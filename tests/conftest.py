"""Shared fixtures: a manual clock, a real SQLite store, and a loopback-only network."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tapgate.gate.clock import ManualClock
from tapgate.store import Store


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
def clock() -> ManualClock:
    """Time that moves only when a test says so."""
    return ManualClock()


def skip_without_postgresql() -> None:
    """Skip (with the one-line reason) where no PostgreSQL server binaries exist; CI has them."""
    if shutil.which("initdb") is None and not list(
        Path("/usr/lib/postgresql").glob("*/bin/initdb")
    ):
        pytest.skip("no PostgreSQL server binaries (initdb) on this machine")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server for the session: $TAPGATE_TEST_PG_URL, or one started here."""
    url = os.environ.get("TAPGATE_TEST_PG_URL")
    if url:
        yield url
        return
    script = Path(__file__).parent.parent / "scripts" / "pg-test-server"
    skip_without_postgresql()
    # Under /tmp itself: the server runs as an unprivileged user, who cannot
    # enter pytest's root-owned temporary directories.
    data = Path(tempfile.mkdtemp(prefix="tapgate-pg-"))
    port = str(_free_port())
    started = subprocess.run(
        [str(script), "start", str(data), port], check=True, capture_output=True, text=True
    )
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run([str(script), "stop", str(data)], check=False, capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database per test: a SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tapgate.db'}"
        return
    yield from _pg_database(request.getfixturevalue("pg_server"))


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database, for what only PostgreSQL can do (several replicas)."""
    yield from _pg_database(pg_server)


def _pg_database(server: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(server, f'CREATE DATABASE "{name}"'))
    try:
        yield server.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(_admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _admin(url: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://", 1))
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated store on a real SQLite file."""
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()
