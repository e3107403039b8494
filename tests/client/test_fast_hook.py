"""The hook's fast path (``python -I -S _fast_hook.py``): what it answers, hands off and imports.

``test_hook_claude_code.py`` runs every hook test through the fast command
too (its ``hook`` fixture), against the real server. Here: a recording
server shows *who* answered (the fast path sends one POST; a hand-off to the
full hook sends its own requests after it), and the fast path's imports are
held to the built-in modules that make it fast. Every case starts the fast
path as a process, so the file is ``slow`` (tests/suites.py); its parts as
functions (flags, URLs, HTTP, JSON, constants) are in test_fast_hook_units.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.client import _fast_hook as fast
from tests.client.test_hook_claude_code import (
    FAST,
    TAPGATE,
    TOKEN,
    cli,
    full_hook_only,
    hook_input,
    subprocess_hook,
)

ALLOWED = {
    "id": None,
    "decision": "allow",
    "status": "allowed",
    "reason": "allow by policy.rules[0] (tool 'Bash')",
    "decided_by": "policy.rules[0]",
    "source": "policy",
    "rule": "policy.rules[0]",
    "edited": False,
    "arguments": None,
}
REQUEST = {
    "tool": "Bash",
    "session": "7f3c2a9e-5b1d-4e8a-9c6f-0d2b4a6e8c10",
    "created_at": "2026-11-24T18:46:31.284357Z",
    "expires_at": "2099-11-24T18:56:31.284357Z",
    "approvers": ["alice"],
    "batch_id": None,
    "consumed": None,
    "reused": False,
    "edited": False,
    "arguments": None,
}
"""What a tool-call state carries besides its decision (``GET /v1/tool-calls/{id}``)."""
PENDING = REQUEST | {
    "id": "req-1",
    "decision": "pending",
    "status": "pending",
    "reason": "asked",
    "decided_by": None,
    "source": None,
    "rule": "policy.risk_defaults.write",
    "resolved_at": None,
}
APPROVED = REQUEST | {
    "id": "req-1",
    "decision": "allow",
    "status": "approved",
    "reason": "approved by alice",
    "decided_by": "alice",
    "source": "approver",
    "rule": None,
    "resolved_at": "2026-11-24T18:47:31.284357Z",
}


@dataclass
class Recorder:
    """A stand-in tapgate server: answers ``submit`` (status, body) and records every request."""

    submit: tuple[int, dict[str, Any]]
    seen: list[tuple[str, str, dict[str, Any] | None]] = field(default_factory=list)
    how: str = "plain"
    """How the submit is answered: ``plain``, ``chunked`` or ``never`` (taken, never answered)."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.seen.append((request.method, request.path_qs, body))
        if request.method == "POST" and request.path == "/v1/tool-calls":
            status, answer = self.submit
            if self.how == "never":
                await asyncio.sleep(3600)
            if self.how == "chunked":
                stream = web.StreamResponse(status=status)
                stream.content_type = "application/json"
                stream.enable_chunked_encoding()
                await stream.prepare(request)
                await stream.write(json.dumps(answer).encode())
                await stream.write_eof()
                return stream
            return web.json_response(answer, status=status)
        return web.json_response(APPROVED)

    def posts(self) -> int:
        return sum(method == "POST" for method, _, _ in self.seen)


@pytest.fixture
async def recorder() -> AsyncIterator[tuple[Recorder, str]]:
    found = Recorder(submit=(200, ALLOWED))
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", found.handle)
    async with TestServer(app, host="127.0.0.1") as server:
        yield found, str(server.make_url("")).rstrip("/")


async def run(command: tuple[str, ...], url: str, payload: str, *flags: str) -> dict[str, Any]:
    code, answer = await subprocess_hook(url, payload, *flags, command=command)
    assert code == 0
    return answer


async def spawn(
    *argv: str, stdin: str = "", cwd: Path | None = None, **env: str
) -> tuple[bytes, bytes]:
    """Run ``argv`` with the agent token (and ``env``) set: stdout and stderr; exit 0 checked."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env={**os.environ, "TAPGATE_AGENT_TOKEN": TOKEN, **env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 60)
    assert proc.returncode == 0, err
    return out, err


def imported_modules(trace: bytes) -> set[str]:
    """The modules named in ``-X importtime`` lines."""
    return {line.split("|")[-1].strip() for line in trace.decode().splitlines() if "|" in line}


BASH = json.dumps(hook_input("PreToolUse", "Bash", {"command": "git status"}))
MAIN = (TAPGATE, "hook", "claude-code")


async def full_hook(
    url: str, payload: str, monkeypatch: pytest.MonkeyPatch, *flags: str
) -> dict[str, Any]:
    """The full hook alone (``main`` with its fast path turned away), in a worker thread."""
    full_hook_only(monkeypatch)
    monkeypatch.setenv("TAPGATE_AGENT_TOKEN", TOKEN)
    monkeypatch.setattr(sys, "stdin", io.StringIO(payload))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert await asyncio.to_thread(cli, "hook", "claude-code", "--url", url, *flags) == 0
    answer: dict[str, Any] = json.loads(out.getvalue())
    return answer


async def test_an_allowed_call_is_answered_by_one_post_and_the_same_output(
    recorder: tuple[Recorder, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast command and the console script each ask once and answer as the full hook."""
    server, url = recorder
    answers = []
    for command in (FAST, MAIN):
        server.seen.clear()
        answers.append(await run(command, url, BASH))
        assert [(method, path) for method, path, _ in server.seen] == [("POST", "/v1/tool-calls")]
    sent = server.seen[0][2]
    assert sent == {
        "tool": "Bash",
        "arguments": {"command": "git status"},
        "session": "7f3c2a9e-5b1d-4e8a-9c6f-0d2b4a6e8c10",
    }
    server.seen.clear()
    full = await full_hook(url, BASH, monkeypatch)
    assert [body for _, _, body in server.seen] == [sent]  # the full hook sends the same call
    assert answers == [full, full]  # and byte for byte: test_dumps_writes_what_json_writes
    assert full["hookSpecificOutput"]["permissionDecision"] == "allow"


async def test_the_console_script_answers_before_loading_the_full_hook(
    recorder: tuple[Recorder, str],
) -> None:
    """``tapgate hook claude-code`` answers an allowed call without argparse or the client."""
    _, url = recorder
    out, err = await spawn(*MAIN, "--url", url, stdin=BASH, PYTHONPROFILEIMPORTTIME="1")
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    imported = imported_modules(err)
    assert {"_socket", "tapgate.client._fast_hook"} <= imported
    for heavy in ("argparse", "dataclasses", "json", "socket", "tapgate.client._hook"):
        assert heavy not in imported


@pytest.mark.parametrize("command", [FAST, MAIN], ids=["fast", "console"])
async def test_a_pending_call_is_handed_over_with_its_answer_never_sent_twice(
    recorder: tuple[Recorder, str], command: tuple[str, ...]
) -> None:
    server, url = recorder
    server.submit = (201, PENDING)
    answer = await run(command, url, BASH)
    assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "tapgate: approved by alice"
    methods = [(method, path.split("?")[0]) for method, path, _ in server.seen]
    assert methods == [("POST", "/v1/tool-calls"), ("GET", "/v1/tool-calls/req-1")]


async def test_an_answer_the_fast_path_cannot_read_is_read_by_the_full_hook(
    recorder: tuple[Recorder, str],
) -> None:
    """A chunked 200 (a proxy's): the full hook reads it; the call is not sent again."""
    server, url = recorder
    server.how = "chunked"
    answer = await run(FAST, url, BASH)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert server.posts() == 1


async def test_a_server_that_takes_the_call_and_never_answers_is_not_asked_again(
    recorder: tuple[Recorder, str],
) -> None:
    server, url = recorder
    server.how = "never"
    answer = await run(FAST, url, BASH, "--timeout", "1")
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert f"server unreachable at {url} (ReadTimeout" in reason and "--on-error deny" in reason
    assert server.posts() == 1


async def test_a_tapgate_in_the_working_directory_is_not_what_the_hand_off_runs(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    """Claude Code runs the hook in the project, which the model can write to."""
    server, url = recorder
    server.submit = (201, PENDING)
    planted = tmp_path / "tapgate"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    allow = {"hookSpecificOutput": {"permissionDecision": "allow", "planted": True}}
    (planted / "__main__.py").write_text(f"print({json.dumps(json.dumps(allow))})\n")
    out, _ = await spawn(*FAST, "--url", url, stdin=BASH, cwd=tmp_path)
    answer = json.loads(out)
    assert "planted" not in answer["hookSpecificOutput"]
    assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "tapgate: approved by alice"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, {"error": {"code": "unauthorized", "message": "invalid bearer token"}}),
        (500, {"error": {"code": "internal", "message": "the store failed"}}),
        (503, {}),
    ],
)
async def test_an_error_status_is_answered_as_the_full_hook_answers_it(
    recorder: tuple[Recorder, str],
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    body: dict[str, Any],
) -> None:
    """Same answer, and the call sent as often as the full hook alone sends it (503: retried)."""
    server, url = recorder
    server.submit = (status, body)
    answers, posts = [], []
    for command in (FAST, MAIN):
        server.seen.clear()
        answers.append(await run(command, url, BASH, "--retry-for", "0"))
        posts.append(server.posts())
    server.seen.clear()
    full = await full_hook(url, BASH, monkeypatch, "--retry-for", "0")
    assert answers == [full, full]
    assert posts == [server.posts(), server.posts()]
    assert (server.posts() == 1) == (status != 503)
    assert full["hookSpecificOutput"]["permissionDecision"] == "deny"


async def test_the_printed_command_is_the_fast_path_with_the_flags_given(
    recorder: tuple[Recorder, str],
) -> None:
    _, url = recorder
    printed, _ = await spawn(*MAIN, "--print-command", "--timeout", "120", "--on-error=ask")
    command = shlex.split(printed.decode())
    assert command[1:4] == ["-I", "-S", fast.SCRIPT]
    assert command[4:] == ["--timeout", "120", "--on-error=ask"]
    answer = await run(tuple(command), url, BASH)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"


async def test_the_fast_path_imports_only_built_in_modules(
    recorder: tuple[Recorder, str],
) -> None:
    """What makes it fast: no ``site``, no ``json`` / ``re`` / ``socket``, no tapgate package."""
    _, url = recorder
    out, err = await spawn(*FAST[:3], "-X", "importtime", FAST[3], "--url", url, stdin=BASH)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    imported = imported_modules(err)
    assert {"_json", "_socket"} <= imported
    for heavy in ("json", "re", "enum", "socket", "typing", "site", "tapgate", "dataclasses"):
        assert heavy not in imported, sorted(imported)
