"""``tapgate run -- COMMAND``: the command runs only when tapgate approves it.

The server is the real one of ``test_hook_claude_code`` (``build_app`` on a
loopback port, SQLite, LINE through a fake API, signed taps). Commands are
harmless Python one-liners that write a marker file in ``tmp_path`` and exit
with a chosen status, so "did it run" is a file on disk, never a guess.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
import threading
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.client._run import countdown_line
from tapgate.gate.clock import ManualClock
from tapgate.server.keys import GATE
from tests.client.test_hook_claude_code import TAPGATE, TOKEN, Served, cli, serve

EXIT_UNAVAILABLE, EXIT_EXPIRED, EXIT_DENIED, EXIT_CONFIG = 69, 75, 77, 78


def marking(marker: Path, status: int = 0, *extra: str) -> list[str]:
    """A command that records that it ran, then exits with ``status``."""
    code = f"import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('ran'); sys.exit({status})"
    return [sys.executable, "-c", code, str(marker), *extra]


class Run(Protocol):
    """The ``run`` fixture: url and ``tapgate run`` arguments; (exit status, stderr)."""

    def __call__(self, url: str, *argv: str) -> Coroutine[Any, Any, tuple[int, str]]: ...


async def run_process(
    url: str, marker: Path, *flags: str, token: str = TOKEN, **kw: Any
) -> asyncio.subprocess.Process:
    """``tapgate run --tool deploy FLAGS -- <marking command>`` as its own process (for signals)."""
    return await asyncio.create_subprocess_exec(
        TAPGATE,
        "run",
        "--url",
        url,
        "--tool",
        "deploy",
        *flags,
        "--",
        *marking(marker),
        env={**os.environ, "TAPGATE_AGENT_TOKEN": token},
        stderr=asyncio.subprocess.PIPE,
        **kw,
    )


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url) as s:
        yield s


@pytest.fixture
async def served_manual(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, ManualClock()) as s:
        yield s


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """``tapgate run`` through ``main`` in a worker thread: (exit status, stderr)."""
    monkeypatch.setenv("TAPGATE_AGENT_TOKEN", TOKEN)

    async def call(url: str, *argv: str) -> tuple[int, str]:
        code = await asyncio.to_thread(cli, "run", "--url", url, *argv)
        _, err = capsys.readouterr()
        return code, err

    return call


async def test_a_command_the_policy_allows_runs_without_asking(
    served: Served, run: Run, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    code, err = await run(served.url, "--", *marking(marker, 3))
    assert code == 3  # the command's own status
    assert marker.read_text() == "ran"
    assert err == ""  # nothing to say when nobody was asked
    assert await served.requests() == []


async def test_an_approved_command_runs_and_its_status_is_passed_on(
    served: Served, run: Run, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    task = asyncio.create_task(run(served.url, "--tool", "deploy", "--", *marking(marker, 3)))
    request = await served.pending()
    assert not marker.exists()  # nothing runs before the tap
    await served.tap(request.id, "approve")
    code, err = await task
    assert code == 3 and marker.read_text() == "ran"
    assert f"(request {request.id})" in err and "tapgate: approved by alice" in err
    assert dict(request.arguments) == {"command": _joined(marking(marker, 3))}


async def test_a_denied_command_never_runs(served: Served, run: Run, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    task = asyncio.create_task(run(served.url, "--tool", "deploy", "--", *marking(marker)))
    await served.deny((await served.pending()).id, "wait for the release window")
    code, err = await task
    assert code == EXIT_DENIED
    assert not marker.exists()
    assert "tapgate: denied: denied by alice: wait for the release window" in err


async def test_a_command_the_shell_aware_policy_denies_never_runs(
    served: Served, run: Run, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    code, err = await run(served.url, "--", *marking(marker, 0, "deny-me"))
    assert code == EXIT_DENIED and not marker.exists()
    assert "tapgate: denied: not this" in err and "policy.rules[8]" in err
    assert await served.requests() == []


async def test_an_expired_request_never_runs(
    served_manual: Served, run: Run, tmp_path: Path
) -> None:
    served, clock = served_manual, served_manual.clock
    assert clock is not None
    marker = tmp_path / "ran"
    task = asyncio.create_task(run(served.url, "--tool", "deploy", "--", *marking(marker)))
    request = await served.pending()
    clock.advance(601)
    code, err = await task
    assert code == EXIT_EXPIRED and not marker.exists()
    assert "tapgate: request expired: no approver answered" in err
    assert (await served.app[GATE].get_request(request.id)).status == "expired"


async def test_the_timeout_withdraws_the_request(served: Served, run: Run, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = ("--tool", "deploy", "--timeout", "0.3", "--", *marking(marker))
    code, err = await run(served.url, *argv)
    assert code == EXIT_EXPIRED and not marker.exists()
    assert "nobody decided within 0.3s; request withdrawn" in err
    [request] = await served.requests()
    assert request.status == "cancelled"


async def test_an_unreachable_server_never_runs_the_command(
    run: Run, tmp_path: Path, closed_port: int
) -> None:
    marker = tmp_path / "ran"
    url = f"http://127.0.0.1:{closed_port}"
    code, err = await run(url, "--retry-for", "0", "--", *marking(marker))
    assert code == EXIT_UNAVAILABLE and not marker.exists()
    assert f"tapgate: server unreachable at {url} (ConnectError" in err


async def test_a_wrong_or_missing_token_is_a_configuration_error(
    served: Served, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    monkeypatch.setenv("WRONG_TOKEN", "wrong-token-0123456789abcdef")
    code, err = await run(served.url, "--token-env", "WRONG_TOKEN", "--", *marking(marker))
    assert code == EXIT_CONFIG and "refused the agent token" in err
    code, err = await run(served.url, "--token-env", "TAPGATE_TEST_UNSET", "--", *marking(marker))
    assert code == EXIT_CONFIG and "no agent token: set $TAPGATE_TEST_UNSET" in err
    assert not marker.exists()


async def test_a_signal_becomes_128_plus_its_number(served: Served, run: Run) -> None:
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    code, _ = await run(served.url, "--", sys.executable, "-c", kill)
    assert code == 128 + signal.SIGTERM


async def test_an_approved_command_that_does_not_exist_is_127(
    served: Served, run: Run, tmp_path: Path
) -> None:
    code, err = await run(served.url, "--tool", "trusted", "--", str(tmp_path / "no-such-tool"))
    assert code == 127 and "tapgate: command not found:" in err


async def test_no_command_is_a_usage_error(served: Served, run: Run) -> None:
    code, err = await run(served.url, "--")
    assert code == 2 and "no command given" in err


async def test_a_command_cannot_pose_as_a_question(
    served: Served, run: Run, tmp_path: Path
) -> None:
    """Questions are approved by any typed answer: ``run`` refuses their tool name."""
    marker = tmp_path / "ran"
    code, err = await run(served.url, "--tool", "human_contact", "--", *marking(marker))
    assert code == 2 and "reserved" in err
    assert not marker.exists()


# -- the installed script: real signals, a real terminal ------------------------------------


@pytest.mark.parametrize(
    ("signum", "status", "how"),
    [(signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated")],
)
async def test_ctrl_c_or_sigterm_while_waiting_cancels_the_request(
    served: Served, tmp_path: Path, signum: int, status: int, how: str
) -> None:
    marker = tmp_path / "ran"
    proc = await run_process(served.url, marker)
    request = await served.pending()
    await asyncio.sleep(0.3)  # let it settle into its long-poll
    proc.send_signal(signum)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == status
    assert f"{how}: request {request.id} not run and cancelled" in err.decode()
    assert (await served.app[GATE].get_request(request.id)).status == "cancelled"
    assert not marker.exists()
    assert "Traceback" not in err.decode()


@contextlib.asynccontextmanager
async def held_asks(
    upstream: str, *, broken_cancel: bool = False
) -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A real HTTP proxy to ``upstream`` that answers ``POST /v1/tool-calls`` only once released.

    The server has the request by then; only the answer carrying its id is held.
    With ``broken_cancel`` every cancel gets a 500 and never reaches the server.
    """
    release = asyncio.Event()

    async def forward(request: web.Request) -> web.Response:
        if broken_cancel and request.path.endswith("/cancel"):
            return web.json_response({"error": {"code": "internal", "message": "x"}}, status=500)
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method, upstream + request.path_qs, data=body, headers=headers
            ) as answer,
        ):
            payload = await answer.read()
            status, kind = answer.status, answer.content_type
        if request.method == "POST" and request.path == "/v1/tool-calls":
            await release.wait()
        return web.Response(body=payload, status=status, content_type=kind)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    async with TestServer(app, host="127.0.0.1") as proxy:
        yield str(proxy.make_url("")).rstrip("/"), release


async def test_ctrl_c_before_the_request_id_arrives_still_cancels_it(
    served: Served, tmp_path: Path
) -> None:
    """Ctrl-C while the ask is on the wire: held until the id is known, then withdrawn."""
    marker = tmp_path / "ran"
    async with held_asks(served.url) as (url, release):
        proc = await run_process(url, marker)
        request = await served.pending()  # on the server; its id not yet at the client
        await asyncio.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        await asyncio.sleep(0.3)
        assert proc.returncode is None  # held, not lost
        release.set()
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert await proc.wait() == 130, err.decode()
    assert f"interrupted (Ctrl-C): request {request.id} not run and cancelled" in err.decode()
    assert (await served.app[GATE].get_request(request.id)).status == "cancelled"
    assert not marker.exists()
    assert "Traceback" not in err.decode()


async def test_a_second_ctrl_c_stops_at_once(served: Served, tmp_path: Path) -> None:
    """For a server that never answers, the second Ctrl-C does not wait for it."""
    marker = tmp_path / "ran"
    async with held_asks(served.url) as (url, release):
        proc = await run_process(url, marker)
        await served.pending()
        await asyncio.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        await asyncio.sleep(0.3)
        assert proc.returncode is None  # the first one is held
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        release.set()
    assert await proc.wait() == 130, err.decode()
    assert "(again to stop now)" in err.decode()
    assert "interrupted (Ctrl-C) before the server answered" in err.decode()
    assert not marker.exists()
    assert "Traceback" not in err.decode()


async def test_a_cancel_that_fails_is_not_reported_as_done(served: Served, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    async with held_asks(served.url, broken_cancel=True) as (url, release):
        release.set()
        proc = await run_process(url, marker)
        request = await served.pending()
        await asyncio.sleep(0.3)  # into its long-poll
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err.decode()
    assert f"request {request.id} not run (and not cancelled:" in err.decode()
    assert "and cancelled" not in err.decode()
    assert (await served.app[GATE].get_request(request.id)).status == "pending"
    assert not marker.exists()


async def test_an_ignored_ctrl_c_stays_ignored(served: Served, tmp_path: Path) -> None:
    """``tapgate run ... &`` in a script ignores SIGINT: holding it must not revive it."""
    marker = tmp_path / "ran"
    async with held_asks(served.url) as (url, release):
        proc = await run_process(
            url, marker, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
        )
        request = await served.pending()
        await asyncio.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        release.set()
        await asyncio.sleep(0.3)
        await served.tap(request.id)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert marker.read_text() == "ran"


async def test_a_held_sigterm_gives_up_after_a_few_seconds(served: Served, tmp_path: Path) -> None:
    """A CI runner kills a job soon after its SIGTERM: the hold must not outlast that."""
    marker = tmp_path / "ran"
    async with held_asks(served.url) as (url, release):
        proc = await run_process(url, marker)
        await served.pending()
        await asyncio.sleep(0.3)
        started = asyncio.get_running_loop().time()
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        waited = asyncio.get_running_loop().time() - started
        release.set()
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()
    assert 4.0 <= waited < 15.0  # the five-second hold, not the ask's retries
    assert "terminated before the server answered" in err.decode()
    assert "was not withdrawn" in err.decode()
    assert not marker.exists()
    assert "Traceback" not in err.decode()


async def test_a_terminal_sees_a_countdown_then_the_command_runs(
    served: Served, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    leader, follower = os.openpty()
    proc = await asyncio.create_subprocess_exec(
        TAPGATE,
        "run",
        "--url",
        served.url,
        "--tool",
        "deploy",
        "--",
        *marking(marker, 4),
        env={**os.environ, "TAPGATE_AGENT_TOKEN": TOKEN, "TAPGATE_URL": "http://unused"},
        stderr=follower,
    )
    os.close(follower)
    seen = bytearray()
    reader = threading.Thread(target=_drain, args=(leader, seen), daemon=True)
    reader.start()
    request = await served.pending()
    for _ in range(500):
        if b"left" in seen:
            break
        await asyncio.sleep(0.01)
    await served.tap(request.id, "approve")
    assert await asyncio.wait_for(proc.wait(), 30) == 4
    reader.join(10)
    os.close(leader)
    text = seen.decode()
    assert f"waiting for approval of `{_joined(marking(marker, 4))[:20]}" in text
    assert f"(request {request.id[:4]}…): 9:5" in text  # 9:59 or 9:58 of the 10 minutes
    assert "approved by alice" in text and marker.read_text() == "ran"


def test_the_countdown_line() -> None:
    assert countdown_line("make deploy", "3fA9x7", 272.9) == (
        "tapgate: waiting for approval of `make deploy` (request 3fA9…): 4:32 left"
    )
    long = countdown_line("x" * 100, "abcdef", 3725)
    assert "`" + "x" * 59 + "…`" in long and long.endswith("1:02:05 left")
    assert countdown_line("ls", "abcd", -3).endswith("0:00 left")


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end closed
            return
        if not chunk:
            return
        into.extend(chunk)


def _joined(argv: list[str]) -> str:
    return shlex.join(argv)


async def test_a_command_under_nohup_keeps_ignoring_hangups(served: Served) -> None:
    """``nohup tapgate run -- deploy``: the deploy must survive the logout, as under nohup."""
    show = "print(next(l for l in open('/proc/self/status') if l.startswith('SigIgn')))"
    proc = await asyncio.create_subprocess_exec(
        TAPGATE,
        "run",
        "--url",
        served.url,
        "--",
        sys.executable,
        "-c",
        show,
        env={**os.environ, "TAPGATE_AGENT_TOKEN": TOKEN},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    ignored = int(out.decode().split()[1], 16)
    assert ignored & (1 << (signal.SIGHUP - 1)), out.decode()


async def test_a_program_named_like_an_assignment_is_refused(
    served: Served, run: Run, tmp_path: Path
) -> None:
    """``A=1 sleep 5`` is judged as an assignment and ``sleep``, but the program run is ``A=1``."""
    code, err = await run(served.url, "--", "A=1", *marking(tmp_path / "ran"))
    assert code == 2 and "named like an assignment" in err
    assert not (tmp_path / "ran").exists() and await served.requests() == []
