"""Shared fixtures: a manual clock, a real SQLite store, and a loopback-only network."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tapgate.core.clock import ManualClock
from tapgate.core.store import Store


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


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite file per test."""
    return f"sqlite:///{tmp_path / 'tapgate.db'}"


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated store on a real SQLite file."""
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()
