"""``tapgate run --sandbox``: the approved command runs under real bubblewrap, confined.

Every escape is tried twice with the same command: without ``--sandbox`` it
works (so the test proves the command can do it), with ``--sandbox`` the
kernel refuses it. The server is the real one on a loopback port; the tools
are ``read_only`` so that the policy allows them without a tap, except where
a test is about asking. Tests that need bwrap skip only where it is not
installed, and fail instead when ``TAPGATE_REQUIRE_BWRAP`` is set (CI sets it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.client import SyncRemoteGate
from tapgate.client._errors import SandboxUnavailable
from tapgate.client._sandbox import SandboxSpec, bwrap_args
from tapgate.config import parse_config
from tapgate.errors import ConfigError
from tapgate.server.app import build_app
from tests.client.test_hook_claude_code import TAPGATE, TOKEN, serve

EXIT_NO_SANDBOX = 71
Run = Callable[..., Coroutine[Any, Any, tuple[int, str]]]


@pytest.fixture
def bwrap() -> str:
    """The installed bwrap; its absence skips the test, or fails it where CI requires bwrap."""
    found = shutil.which("bwrap")
    if found is None:
        if os.environ.get("TAPGATE_REQUIRE_BWRAP"):
            pytest.fail("TAPGATE_REQUIRE_BWRAP is set but bwrap is not installed")
        pytest.skip("bubblewrap (bwrap) is not installed")
    return found


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory on the root filesystem outside /tmp (which the sandbox replaces anyway)."""
    path = Path(tempfile.mkdtemp(prefix="tapgate-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    """The places the ``boxed`` tool's sandbox names, created for real."""
    made = {
        "work": tmp_path / "work",
        "secrets": tmp_path / "work" / "secrets",
        "token": tmp_path / "token.txt",
        "project": tmp_path / "project",
    }
    for name in ("work", "secrets", "project"):
        made[name].mkdir(parents=True)
    (made["secrets"] / "key").write_text("SECRET")
    made["token"].write_text("SECRET")
    return made


@contextlib.asynccontextmanager
async def serve_boxed(tmp_path: Path, paths: dict[str, Path]) -> AsyncIterator[str]:
    """The real server with tools whose configs carry sandbox sections; its URL."""
    tools: dict[str, Any] = {
        "plain": {"risk": "read_only"},
        "boxed": {
            "risk": "read_only",
            "sandbox": {
                "writable": [str(paths["work"])],
                "hidden": [str(paths["secrets"]), str(paths["token"])],
            },
        },
        "online": {"risk": "read_only", "sandbox": {"network": True}},
        "here_*": {"risk": "read_only", "sandbox": {"writable": ["."]}},
    }
    config = parse_config(
        {
            "server": {"heartbeat_interval": 3600},
            "store": {"url": f"sqlite:///{tmp_path / 'tapgate.db'}"},
            "agents": [{"name": "ci", "token": TOKEN}],
            "channels": {"console": {"enabled": False}},
            "policy": {"tools": tools},
        }
    )
    async with TestServer(build_app(config), host="127.0.0.1") as server:
        yield str(server.make_url("")).rstrip("/")


@pytest.fixture
async def url(tmp_path: Path, paths: dict[str, Path]) -> AsyncIterator[str]:
    async with serve_boxed(tmp_path, paths) as served:
        yield served


@pytest.fixture
def run() -> Run:
    """The installed ``tapgate run`` in its own process: (exit status, all of its stderr).

    A real process, so bwrap's and the command's own messages are there to check, and
    ``PATH`` (which a test may empty) is read from the environment as a user's shell passes it.
    """

    async def call(url: str, *argv: str) -> tuple[int, str]:
        child = await asyncio.create_subprocess_exec(
            TAPGATE, "run", "--url", url, *argv,
            env={**os.environ, "TAPGATE_AGENT_TOKEN": TOKEN},
            stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await child.communicate()
        return await child.wait(), err.decode()

    return call


# The interpreter itself, not the venv's link to it: a checkout under /tmp (CI's
# clean clone may be one) has its venv hidden by the sandbox's private /tmp.
_PYTHON = os.path.realpath(sys.executable)


def python(code: str, *args: str) -> list[str]:
    """A stdlib-only Python command the sandbox can start (see ``_PYTHON``)."""
    if _PYTHON.startswith("/tmp/"):
        pytest.fail(f"the sandbox hides /tmp, where this Python lives: {_PYTHON}")
    return [_PYTHON, "-c", code, *args]


WRITE = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('x')"
READ = "import pathlib, sys; sys.exit('SECRET' not in pathlib.Path(sys.argv[1]).read_text())"
CONNECT = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)"


async def both(run: Run, url: str, tool: str, argv: list[str]) -> tuple[int, int, str]:
    """The command's status without and with ``--sandbox`` (and the sandboxed stderr)."""
    free, _ = await run(url, "--tool", tool, "--", *argv)
    boxed, err = await run(url, "--tool", tool, "--sandbox", "--", *argv)
    return free, boxed, err


async def test_writes_outside_the_writable_paths_are_refused(
    bwrap: str, url: str, run: Run, paths: dict[str, Path], outside: Path
) -> None:
    free, boxed, err = await both(run, url, "boxed", python(WRITE, str(outside / "a")))
    assert free == 0 and (outside / "a").exists()
    (outside / "a").unlink()
    assert boxed == 1 and not (outside / "a").exists()
    assert "Read-only file system" in err
    code, _ = await run(url, "--tool", "boxed", "--sandbox", "--", *python(WRITE, "w"))
    assert code == 1  # the starting directory (the checkout) is not writable by default
    usr = Path("/usr/tapgate-sandbox-test")
    code, _ = await run(url, "--tool", "boxed", "--sandbox", "--", *python(WRITE, str(usr)))
    assert code == 1 and not usr.exists()  # noqa: ASYNC240 - one stat, after the run
    target = paths["work"] / "built"
    code, _ = await run(url, "--tool", "boxed", "--sandbox", "--", *python(WRITE, str(target)))
    assert code == 0 and target.read_text() == "x"  # the configured writable path


async def test_tmp_is_private_and_empty(
    bwrap: str, url: str, run: Run, tmp_path: Path, paths: dict[str, Path]
) -> None:
    private = Path(f"/tmp/tapgate-sandbox-{os.getpid()}")
    check = "import os, sys, pathlib; pathlib.Path(sys.argv[1]).write_text('x'); "
    check += "sys.exit(0 if not os.path.exists(sys.argv[2]) else 4)"
    code, _ = await run(
        url, "--tool", "plain", "--sandbox", "--", *python(check, str(private), str(tmp_path))
    )
    assert code == 0  # writable inside, and the host's /tmp (tmp_path) is not there
    assert not private.exists()  # noqa: ASYNC240 - nothing reached the host's /tmp


async def test_the_network_is_off_unless_the_tool_allows_it(bwrap: str, url: str, run: Run) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = str(listener.getsockname()[1])
        free, boxed, err = await both(run, url, "plain", python(CONNECT, port))
        assert free == 0 and boxed == 1
        assert "ConnectionRefusedError" in err  # the sandbox's own loopback: nobody listens
        online, _ = await run(url, "--tool", "online", "--sandbox", "--", *python(CONNECT, port))
        assert online == 0


async def test_hidden_paths_cannot_be_read(
    bwrap: str, url: str, run: Run, paths: dict[str, Path]
) -> None:
    key = paths["secrets"] / "key"
    new = paths["secrets"] / "key.new"
    free, boxed, _ = await both(run, url, "boxed", python(READ, str(key)))
    assert free == 0 and boxed == 1  # an empty directory: the file is not there
    free, boxed, _ = await both(run, url, "boxed", python(READ, str(paths["token"])))
    assert free == 0 and boxed == 1  # /dev/null in its place: empty, or (nodev /tmp) unopenable
    # Hidden inside a writable path stays hidden, and cannot be written either.
    code, _ = await run(url, "--tool", "boxed", "--sandbox", "--", *python(WRITE, str(new)))
    assert code == 1 and not new.exists()


async def test_dot_makes_the_starting_directory_writable(
    bwrap: str, url: str, paths: dict[str, Path], outside: Path
) -> None:
    """``writable: ["."]`` on a tool glob, through the installed script in its own process."""
    project = paths["project"]
    env = {**os.environ, "TAPGATE_AGENT_TOKEN": TOKEN}
    statuses = []
    # ../escaped lands in the sandbox's private /tmp (project is under the host's /tmp).
    for target in ("out", str(outside / "escaped"), "../escaped"):
        child = await asyncio.create_subprocess_exec(
            TAPGATE, "run", "--url", url, "--tool", "here_build", "--sandbox", "--",
            *python(WRITE, target), cwd=project, env=env,
        )  # fmt: skip
        statuses.append(await child.wait())
    assert statuses[:2] == [0, 1]
    assert (project / "out").read_text() == "x"
    assert not (outside / "escaped").exists() and not (project.parent / "escaped").exists()


async def test_the_command_status_and_a_missing_program_keep_their_meaning(
    bwrap: str, url: str, run: Run, tmp_path: Path
) -> None:
    code, _ = await run(url, "--tool", "plain", "--sandbox", "--", *python("raise SystemExit(5)"))
    assert code == 5
    code, err = await run(url, "--tool", "plain", "--sandbox", "--", str(tmp_path / "nope"))
    assert code == 127 and "tapgate: command not found:" in err
    code, err = await run(url, "--tool", "plain", "--sandbox", "--", "no-such-program-tapgate")
    assert code == 127


PRIVILEGES = """
import os, sys
caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm'))]
pids = [d for d in os.listdir('/proc') if d.isdigit()]
sys.exit(0 if set(caps) == {'0' * 16} and os.getsid(0) in (1, os.getpid()) and len(pids) < 5 else 6)
"""


async def test_no_capabilities_no_terminal_session_no_other_processes(
    bwrap: str, url: str, run: Run
) -> None:
    """Even run as root: no capability to remount, no TIOCSTI into our terminal, a bare /proc."""
    code, _ = await run(url, "--tool", "plain", "--sandbox", "--", *python(PRIVILEGES))
    assert code == 0


async def test_an_approved_command_runs_confined(
    bwrap: str, tmp_path: Path, run: Run, outside: Path
) -> None:
    """The sandbox is checked before asking and applied after the tap (defaults: no writes)."""
    async with serve(f"sqlite:///{tmp_path / 'tapgate.db'}") as served:
        argv = python(WRITE, str(outside / "deployed"))
        task = asyncio.create_task(run(served.url, "--tool", "deploy", "--sandbox", "--", *argv))
        request = await served.pending()
        await served.tap(request.id, "approve")
        code, err = await task
    assert code == 1 and "tapgate: approved by alice" in err
    assert "Read-only file system" in err
    assert not (outside / "deployed").exists()


# -- when the sandbox cannot be applied ------------------------------------------------


async def test_without_bwrap_nothing_is_asked_and_nothing_runs(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    marker = tmp_path / "ran"
    async with serve(f"sqlite:///{tmp_path / 'tapgate.db'}") as served:
        argv = python(WRITE, str(marker))
        code, err = await run(served.url, "--tool", "deploy", "--sandbox", "--", *argv)
        assert await served.requests() == []  # no approver was bothered
    assert code == EXIT_NO_SANDBOX and not marker.exists()
    assert "tapgate: cannot sandbox the command, not running it: bwrap not found" in err
    assert "apt-get install bubblewrap" in err


async def test_best_effort_warns_and_runs_unconfined(
    url: str, tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    marker = tmp_path / "ran"
    code, err = await run(
        url, "--tool", "boxed", "--sandbox=best-effort", "--", *python(WRITE, str(marker))
    )
    assert code == 0 and marker.read_text() == "x"
    assert "tapgate: warning: bwrap not found" in err and "running unsandboxed" in err


async def test_a_bwrap_that_cannot_build_the_sandbox_says_why(
    url: str, tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host without user namespaces, as bwrap reports it there (a stand-in bwrap)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    marker = tmp_path / "ran"
    code, err = await run(url, "--tool", "plain", "--sandbox", "--", *python(WRITE, str(marker)))
    assert code == EXIT_NO_SANDBOX and not marker.exists()
    assert "bwrap cannot build the sandbox here (bwrap: setting up uid map" in err
    assert "user namespaces" in err


async def test_a_server_without_sandbox_configs_is_refused(
    bwrap: str, run: Run, tmp_path: Path
) -> None:
    """An older tapgate (no ``/v1/tools/.../sandbox``): strict refuses rather than guess."""
    async with TestServer(web.Application(), host="127.0.0.1") as old:
        marker = tmp_path / "ran"
        url = str(old.make_url("")).rstrip("/")
        code, err = await run(url, "--sandbox", "--", *python(WRITE, str(marker)))
    assert code == EXIT_NO_SANDBOX and not marker.exists()
    assert "upgrade the tapgate server" in err


# -- the config, the route and the command line ---------------------------------------


async def test_the_server_states_each_tools_sandbox(url: str, paths: dict[str, Path]) -> None:
    def ask() -> list[SandboxSpec]:
        with SyncRemoteGate(url, TOKEN) as gate:
            return [gate.sandbox(tool) for tool in ("boxed", "online", "here_x", "nameless/x")]

    boxed, online, here, nameless = await asyncio.to_thread(ask)
    assert boxed == SandboxSpec(
        writable=(str(paths["work"]),),
        hidden=(str(paths["secrets"]), str(paths["token"])),
        source="policy.tools.boxed.sandbox",
    )
    assert online == SandboxSpec(network=True, source="policy.tools.online.sandbox")
    assert here == SandboxSpec(writable=(".",), source="policy.tools.here_*.sandbox")
    assert nameless == SandboxSpec()  # no config: no network, nothing writable
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{url}/v1/tools/boxed/sandbox")
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("sandbox", "message"),
    [
        ({"writable": ["build"]}, 'writable[0]: expected an absolute path or "."'),
        ({"writable": ["/srv/../etc"]}, "writable[0]: expected a normalised path"),
        ({"writable": ["/"]}, "writable[0]: '/' is the whole filesystem"),
        ({"hidden": ["."]}, "hidden[0]: expected an absolute path"),
        ({"network": "maybe"}, "network: expected true or false"),
        ({"writeable": []}, "unknown key 'writeable' (did you mean 'writable'?)"),
    ],
)
def test_sandbox_config_errors_name_their_yaml_path(sandbox: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"policy": {"tools": {"deploy": {"sandbox": sandbox}}}})
    assert str(caught.value).startswith("policy.tools.deploy.sandbox.")
    assert message in str(caught.value)


def test_hidden_mounts_come_last_and_everything_else_is_off(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "secret").mkdir(parents=True)
    spec = SandboxSpec(writable=(str(work), "/does/not/exist"), hidden=(str(work / "secret"),))
    args = bwrap_args(spec, cwd="/")
    assert args[:5] == ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    assert "--share-net" not in args and "/does/not/exist" not in args
    assert args.index("--tmpfs") < args.index("--bind") < args.index(str(work / "secret"))
    assert args[-2:] == ["--chdir", "/"]
    with pytest.raises(SandboxUnavailable, match="whole filesystem"):
        bwrap_args(SandboxSpec(writable=(".",)), cwd="/")
