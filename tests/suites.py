"""How the suite is split and run: the ``slow`` marker by folder, one PostgreSQL for all workers.

``pytest -m "not slow and not postgres"`` is the contributor's inner loop:
the unit and app-level tests on SQLite, without the suites that start real
processes, browsers or frameworks, and without the PostgreSQL side of the
store's cases (the full run has both). A test is slow because of the folder
it lives in (or its file, or a parameter that starts a process), never
because someone remembered to mark it, so a new end-to-end test cannot slip
into the fast set by accident (tests/test_suites.py checks the list names
folders that exist); a case is
``postgres`` because it asks for a PostgreSQL database. When ``-m``
deselects every slow test, the slow folders are not even collected: their
imports (the frameworks, Playwright) are most of a worker's start-up.

Under pytest-xdist the controller starts the throwaway PostgreSQL server
(when ``TAPGATE_TEST_PG_URL`` names none) before the workers exist, so they
inherit its URL and share the one server, each test in a database of its own;
without workers the session fixture ``pg_server`` starts it on first use.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

__all__ = [
    "SLOW_FILES",
    "SLOW_FOLDERS",
    "SLOW_PARAMS",
    "has_postgresql",
    "is_controller",
    "is_slow",
    "mark_postgresql",
    "mark_slow_folders",
    "skips_collecting",
    "slow_first",
    "start_postgresql",
    "start_shared_postgresql",
    "stop_postgresql",
    "stop_shared_postgresql",
]

TESTS = Path(__file__).parent
SCRIPT = TESTS.parent / "scripts" / "pg-test-server"

SLOW_FOLDERS = frozenset(
    {"e2e", "web", "integrations", "packaging", "container", "deploy", "scale"}
)
"""Folders under tests/ whose every test is ``slow``: real processes, Chromium, frameworks,
and ``scale`` (masking timed on half a megabyte of hostile text per case)."""

SLOW_FILES = frozenset(
    {
        "client/test_restart.py",
        "client/test_restart_commands.py",
        "client/test_run_sandbox.py",
        "channels/test_plugin.py",
        "channels/telegram/test_crash.py",
        "channels/discord/test_crash.py",
        "channels/teams/test_crash.py",
        "client/test_acp_proxy.py",
        "client/test_acp_proxy_node.py",
        "client/test_mcp_proxy.py",
        "client/test_mcp_failures.py",
        "client/test_mcp_unlisted.py",
        "client/test_fast_hook.py",
        "client/test_run.py",
        "cli/test_cli_serve.py",
        "test_benchmarks_run.py",
    }
)
"""Single files, beside fast ones, whose cases start real processes: servers killed and
restarted, bubblewrap, the MCP and ACP proxies with their agents, ``tapgate run``'s commands,
``tapgate serve`` itself."""

SLOW_PARAMS = frozenset({("hook", "fast")})
"""Fixture parameters (fixture, value) whose cases start a real process: the Claude Code and
Codex hook tests run each case three ways, and their ``fast`` way runs the command the hook
prints, as Claude Code would, in a process of its own."""

_STARTED: list[Path] = []


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` is slow by its folder, its file, or a parameter that starts a process."""
    try:
        relative = item.path.relative_to(TESTS)
    except ValueError:
        return False
    if relative.parts[0] in SLOW_FOLDERS or relative.as_posix() in SLOW_FILES:
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    return any(name in params and params[name] == value for name, value in SLOW_PARAMS)


def mark_slow_folders(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test under a slow folder, in a slow file, or with a slow parameter."""
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


def slow_first(items: list[pytest.Item]) -> None:
    """Put the ``slow`` tests first, each file's tests still together and in order.

    Collected by name, the end-to-end folders (real restarts and container
    builds, 10 – 40 s each, mostly waiting) came last and kept one worker
    busy for a minute after the others had finished. First in the order,
    under ``--dist worksteal`` (``addopts``), they start early; a worker that
    runs out of tests takes half of another's queue, so the quick tests fill
    in around them and the workers finish within seconds of each other
    (measured: 366 – 370 s, against 322 – 418 s collected by name under
    ``--dist load``). A file's tests stay together in the order, but a steal
    can still split a file between two workers, and each then sets up the
    file's session fixtures (seen: the container image built twice, ~40 s):
    such fixtures must not share names or files between workers.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


PG_FIXTURES = frozenset({"pg_server", "pg_url", "pg_template"})
"""Fixtures that reach the PostgreSQL server; ``db_url`` does on its ``postgresql`` side."""


def mark_postgresql(items: list[pytest.Item]) -> None:
    """Mark ``postgres`` every case that uses a PostgreSQL database."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgresql = callspec is not None and callspec.params.get("db_url") == "postgresql"
        fixtures = frozenset(getattr(item, "fixturenames", ()))
        if on_postgresql or not PG_FIXTURES.isdisjoint(fixtures):
            item.add_marker(pytest.mark.postgres)


def _deselects(marker: str, markexpr: str) -> bool:
    """Whether ``-m markexpr`` deselects a test marked ``marker`` whatever else it carries."""
    if not markexpr.strip():
        return False
    expression = Expression.compile(markexpr)
    others = sorted(set(re.findall(r"[A-Za-z_][\w.]*", markexpr)) - {"and", "or", "not", marker})
    for carried in itertools.product((False, True), repeat=len(others)):
        marks = {marker, *(name for name, on in zip(others, carried, strict=True) if on)}
        if expression.evaluate(lambda name, /, marks=marks, **_: name in marks):
            return False
    return True


def skips_collecting(path: Path, config: pytest.Config) -> bool:
    """Whether ``path`` (a slow folder or file) need not be collected at all under this ``-m``."""
    try:
        relative = path.relative_to(TESTS)
    except ValueError:
        return False
    if not relative.parts:
        return False
    slow = (relative.parts[0] in SLOW_FOLDERS and len(relative.parts) == 1) or (
        relative.as_posix() in SLOW_FILES
    )
    return slow and _deselects("slow", str(config.getoption("markexpr") or ""))


def has_postgresql() -> bool:
    """Whether PostgreSQL's server binaries (``initdb``) are on this machine."""
    return shutil.which("initdb") is not None or bool(
        list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    )


def start_postgresql() -> tuple[str, Path]:
    """Start a throwaway server on a free loopback port: its URL and data directory."""
    # Under /tmp (or /dev/shm) itself: the server runs as an unprivileged user,
    # who cannot enter pytest's root-owned temporary directories.
    data = Path(tempfile.mkdtemp(prefix="tapgate-pg-", dir=pg_data_parent()))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = subprocess.run(
        [str(SCRIPT), "start", str(data), str(port)], check=True, capture_output=True, text=True
    )
    return started.stdout.strip(), data


SHM = Path("/dev/shm")
SHM_ROOM = 1 << 30
"""Free bytes a tmpfs must have to hold the server's data (a run leaves well under 500 MB)."""


def pg_data_parent(shm: Path = SHM) -> str | None:
    """Where a throwaway server keeps its data: tmpfs when it has room, else the default.

    Every PostgreSQL case creates a database from a template and drops it, and
    each drop forces a checkpoint. On ext4 that took 35 - 50 ms of kernel time
    a case on a fresh server and 200 - 380 ms on one that had run a few suites;
    on tmpfs, 15 - 18 ms (docs/benchmarks.md). A container's small /dev/shm
    (Docker's default is 64 MB) is passed over.
    """
    try:
        found = os.statvfs(shm)
    except OSError:
        return None
    roomy = found.f_bavail * found.f_frsize >= SHM_ROOM
    return str(shm) if roomy and os.access(shm, os.W_OK) else None


def stop_postgresql(data: Path) -> None:
    """Stop the server :func:`start_postgresql` started in ``data`` and remove its files."""
    subprocess.run([str(SCRIPT), "stop", str(data)], check=False, capture_output=True)
    shutil.rmtree(data, ignore_errors=True)


def is_controller(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist controller: it runs no test and collects none."""
    return not hasattr(config, "workerinput") and bool(config.getoption("numprocesses", None))


def start_shared_postgresql(config: pytest.Config) -> None:
    """In an xdist controller, start the one server the workers will share."""
    if not is_controller(config):
        return  # a worker, or no workers: the session fixture starts it if needed
    if os.environ.get("TAPGATE_TEST_PG_URL") or not has_postgresql():
        return
    if _deselects("postgres", str(config.getoption("markexpr") or "")):
        return  # the inner loop: no case will ask for it
    url, data = start_postgresql()
    _STARTED.append(data)
    os.environ["TAPGATE_TEST_PG_URL"] = url


def stop_shared_postgresql() -> None:
    """Stop the server :func:`start_shared_postgresql` started, if any."""
    while _STARTED:
        os.environ.pop("TAPGATE_TEST_PG_URL", None)
        stop_postgresql(_STARTED.pop())
