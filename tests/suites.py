"""How the suite is split and run: the ``slow`` marker by folder, one PostgreSQL for all workers.

``pytest -m "not slow"`` is the contributor's inner loop: the unit and
app-level tests, without the suites that start real processes, browsers or
frameworks. A test is slow because of the folder it lives in, never because
someone remembered to mark it, so a new end-to-end test cannot slip into the
fast set by accident (tests/test_conventions.py checks the list names folders
that exist).

Under pytest-xdist the controller starts the throwaway PostgreSQL server
(when ``TAPGATE_TEST_PG_URL`` names none) before the workers exist, so they
inherit its URL and share the one server, each test in a database of its own;
without workers the session fixture ``pg_server`` starts it on first use.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

__all__ = [
    "SLOW_FILES",
    "SLOW_FOLDERS",
    "has_postgresql",
    "mark_slow_folders",
    "start_postgresql",
    "start_shared_postgresql",
    "stop_postgresql",
    "stop_shared_postgresql",
]

TESTS = Path(__file__).parent
SCRIPT = TESTS.parent / "scripts" / "pg-test-server"

SLOW_FOLDERS = frozenset({"e2e", "web", "integrations", "packaging", "container", "deploy"})
"""Folders under tests/ whose every test is ``slow``: real processes, Chromium, frameworks."""

SLOW_FILES = frozenset(
    {
        "client/test_restart.py",
        "client/test_restart_commands.py",
        "client/test_run_sandbox.py",
        "channels/test_plugin.py",
        "channels/telegram/test_crash.py",
        "channels/discord/test_crash.py",
        "test_benchmarks_run.py",
    }
)
"""Single files, beside fast ones, that restart real servers or start bubblewrap."""

_STARTED: list[Path] = []


def mark_slow_folders(items: list[pytest.Item]) -> None:
    """Mark every test under a slow folder (or in a slow file) ``slow``."""
    for item in items:
        try:
            relative = item.path.relative_to(TESTS)
        except ValueError:
            continue
        if relative.parts[0] in SLOW_FOLDERS or relative.as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


def has_postgresql() -> bool:
    """Whether PostgreSQL's server binaries (``initdb``) are on this machine."""
    return shutil.which("initdb") is not None or bool(
        list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    )


def start_postgresql() -> tuple[str, Path]:
    """Start a throwaway server on a free loopback port: its URL and data directory."""
    # Under /tmp itself: the server runs as an unprivileged user, who cannot
    # enter pytest's root-owned temporary directories.
    data = Path(tempfile.mkdtemp(prefix="tapgate-pg-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = subprocess.run(
        [str(SCRIPT), "start", str(data), str(port)], check=True, capture_output=True, text=True
    )
    return started.stdout.strip(), data


def stop_postgresql(data: Path) -> None:
    """Stop the server :func:`start_postgresql` started in ``data`` and remove its files."""
    subprocess.run([str(SCRIPT), "stop", str(data)], check=False, capture_output=True)
    shutil.rmtree(data, ignore_errors=True)


def start_shared_postgresql(config: pytest.Config) -> None:
    """In an xdist controller, start the one server the workers will share."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return  # a worker, or no workers: the session fixture starts it if needed
    if os.environ.get("TAPGATE_TEST_PG_URL") or not has_postgresql():
        return
    url, data = start_postgresql()
    _STARTED.append(data)
    os.environ["TAPGATE_TEST_PG_URL"] = url


def stop_shared_postgresql() -> None:
    """Stop the server :func:`start_shared_postgresql` started, if any."""
    while _STARTED:
        os.environ.pop("TAPGATE_TEST_PG_URL", None)
        stop_postgresql(_STARTED.pop())
