"""``tapgate hook claude-code``: Claude Code's hook JSON in, a permission decision out.

Every test runs the real CLI entry point (``main`` in a worker thread with
stdin and stdout redirected, or the installed ``tapgate`` script as a real
subprocess) against the real server (``build_app`` on a loopback port, a
SQLite file, the real LINE notifier and webhook talking to a fake LINE API).
Approvals arrive as signed LINE taps; denials with a reason through the gate,
as the Slack webhook makes them; expiry is driven by a ``ManualClock``.

The hook inputs are shaped like Claude Code's (``PreToolUseHookInput`` and
``PermissionRequestHookInput`` of anthropics/claude-agent-sdk-python) and
every answer is checked against the output shapes Claude Code reads. The
shell commands in them are strings sent to the policy; nothing here runs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.cli import main, quick_hook
from tapgate.client._fast_hook import SCRIPT
from tapgate.config import load_config, parse_config
from tapgate.gate.clock import ManualClock
from tapgate.gate.models import Request, ToolCall
from tapgate.policy.engine import Policy
from tapgate.server.app import build_app
from tapgate.server.keys import GATE
from tests.fakes import FakeLine
from tests.fakes.taps import signed_line_tap

TOKEN = "claude-code-agent-token-0123456789"
LINE_SECRET = "hook-test-line-channel-secret"
LINE_TOKEN = "hook-test-line-access-token"
ALICE = "U" + "a1" * 16
TAPGATE = str(Path(sys.executable).with_name("tapgate"))
EXAMPLE = Path(__file__).parents[2] / "examples" / "claude-code.yaml"
FAST = (sys.executable, "-I", "-S", SCRIPT)
"""The fast command line, as ``tapgate hook claude-code --print-command`` prints it."""

POLICY: dict[str, Any] = {
    "default_approvers": ["alice"],
    "default_timeout": "10m",
    "tools": {
        "Bash": {"risk": "write", "shell": "command"},
        "Edit": {"risk": "write", "fingerprint": ["file_path"]},
        "shell": {"risk": "write", "shell": "command"},
        "trusted": {"risk": "read_only"},
        "mcp__*": {"risk": "write"},
    },
    "rules": [
        {"tool": "Bash", "args": {"command": "git status*"}, "action": "allow"},
        {"tool": "Bash", "args": {"command": "rm -rf *"}, "action": "deny", "reason": "no rm -rf"},
        {"tool": "Edit", "args": {"file_path": "/work/app/docs/*"}, "action": "allow"},
        {"tool": "Edit", "args": {"file_path": "*.env"}, "action": "deny", "reason": "no .env"},
        {"tool": "mcp__github__*", "args": {"repo": "sandbox"}, "action": "allow"},
        {
            "tool": "mcp__github__*",
            "args": {"repo": "infra"},
            "action": "deny",
            "reason": "no infra",
        },
        {"tool": "deploy", "action": "ask", "reason": "deploys need a human"},
        {"tool": "shell", "args": {"command": "*python* -c *"}, "action": "allow"},
        {"tool": "shell", "args": {"command": "*deny-me*"}, "action": "deny", "reason": "not this"},
    ],
}

# Per tool: input the policy allows, input it denies, input it asks a human about.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "Bash": (
        {"command": "git status", "description": "Show working tree status"},
        {"command": "git status && rm -rf /", "description": "Clean up"},
        {"command": "make deploy", "description": "Deploy"},
    ),
    "Edit": (
        {"file_path": "/work/app/docs/intro.md", "old_string": "teh", "new_string": "the"},
        {"file_path": "/work/app/.env", "old_string": "A=1", "new_string": "A=2"},
        {"file_path": "/work/app/src/main.py", "old_string": "x = 1", "new_string": "x = 2"},
    ),
    "mcp__github__create_issue": (
        {"owner": "acme", "repo": "sandbox", "title": "Flaky test", "body": "It fails."},
        {"owner": "acme", "repo": "infra", "title": "Rotate keys", "body": "Now."},
        {"owner": "acme", "repo": "web", "title": "Broken link", "body": "On /about."},
    ),
}
TOOLS = sorted(CASES)
EVENTS = ("PreToolUse", "PermissionRequest")


def hook_input(event: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A hook input as Claude Code writes it on the hook's stdin."""
    body: dict[str, Any] = {
        "session_id": "7f3c2a9e-5b1d-4e8a-9c6f-0d2b4a6e8c10",
        "transcript_path": "/home/dev/.claude/projects/-work-app/7f3c2a9e.jsonl",
        "cwd": "/work/app",
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": tool_input,
    }
    if event == "PreToolUse":
        body["tool_use_id"] = "toolu_01HZX3Q5N8K2M4P6R7S9T1V3W5"
    else:
        body["permission_suggestions"] = [
            {
                "type": "addRules",
                "rules": [{"toolName": tool}],
                "behavior": "allow",
                "destination": "localSettings",
            }
        ]
    return body


def verdict(answer: dict[str, Any], event: str) -> tuple[str, str]:
    """The verdict and the text for Claude or the user, after checking the answer's shape."""
    if event == "PreToolUse":
        assert set(answer) == {"hookSpecificOutput"}, answer
        out = answer["hookSpecificOutput"]
        assert set(out) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
        assert out["hookEventName"] == "PreToolUse"
        assert out["permissionDecision"] in ("allow", "deny", "ask")
        assert isinstance(out["permissionDecisionReason"], str)
        return out["permissionDecision"], out["permissionDecisionReason"]
    if "hookSpecificOutput" not in answer:  # no decision: Claude Code shows its dialog
        assert set(answer) == {"systemMessage"}, answer
        return "ask", answer["systemMessage"]
    assert set(answer) == {"hookSpecificOutput"}, answer
    out = answer["hookSpecificOutput"]
    assert set(out) == {"hookEventName", "decision"}
    assert out["hookEventName"] == "PermissionRequest"
    decision = out["decision"]
    if decision["behavior"] == "allow":
        assert set(decision) == {"behavior"}
        return "allow", ""
    assert decision["behavior"] == "deny" and set(decision) == {"behavior", "message"}
    return "deny", decision["message"]


@dataclass
class Served:
    """The real server on a loopback port, its fake LINE API and (maybe) a manual clock."""

    app: web.Application
    url: str
    line: FakeLine
    clock: ManualClock | None

    async def pending(self) -> Request:
        """The one pending request, once the client under test has created it."""
        for _ in range(5000):
            found = await self.app[GATE].store.list_requests(status="pending")
            if found:
                return found[0]
            await asyncio.sleep(0.002)
        raise AssertionError("no pending request appeared")

    async def tap(self, request_id: str, action: str = "approve") -> None:
        """Alice taps a button in LINE: a signed webhook call, as LINE makes it."""
        body, headers = signed_line_tap(LINE_SECRET, ALICE, request_id, action)
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/webhooks/line", data=body, headers=headers) as response,
        ):
            assert response.status == 200, await response.text()

    async def deny(self, request_id: str, reason: str) -> None:
        """Alice denies with a reason (Slack's modal can carry one; LINE's buttons cannot)."""
        await self.app[GATE].resolve(request_id, "deny", by="alice", reason=reason)

    async def requests(self) -> list[Request]:
        return await self.app[GATE].store.list_requests()


@contextlib.asynccontextmanager
async def serve(
    db_url: str, clock: ManualClock | None = None, policy: dict[str, Any] | None = None
) -> AsyncIterator[Served]:
    """``build_app`` with a LINE channel, on a real port; test_run and test_mcp_proxy use it too.

    ``db_url`` is usually the ``migrated_sqlite_url`` fixture's copy of the
    migrated template: booting on an empty file would run every migration
    (~35 ms of CPU) in each of these tests.
    """
    async with FakeLine(access_token=LINE_TOKEN) as line:
        config = parse_config(
            {
                "server": {"heartbeat_interval": 3600},
                "store": {"url": db_url},
                "agents": [{"name": "claude", "token": TOKEN}],
                "approvers": [{"name": "alice", "line": ALICE}],
                "channels": {
                    "line": {
                        "channel_access_token": LINE_TOKEN,
                        "channel_secret": LINE_SECRET,
                        "api_base_url": line.url,
                    }
                },
                "policy": POLICY if policy is None else policy,
            }
        )
        app = build_app(config, clock=clock)
        async with TestServer(app, host="127.0.0.1") as server:
            yield Served(app=app, url=str(server.make_url("")).rstrip("/"), line=line, clock=clock)


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url) as s:
        yield s


@pytest.fixture
async def served_manual(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, ManualClock()) as s:
        yield s


class Hook(Protocol):
    """The ``hook`` fixture: url, hook input (a dict, or raw stdin), flags; the JSON answer."""

    def __call__(
        self, url: str, payload: dict[str, Any] | str, *flags: str
    ) -> Coroutine[Any, Any, dict[str, Any]]: ...


def cli(*argv: str) -> int:
    """``main`` as the console script runs it: argparse's exits become the status."""
    try:
        return main(list(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1


def full_hook_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` without its in-process fast path: the full hook answers everything."""
    monkeypatch.setattr(quick_hook, "first_try", lambda argv: argv)


@pytest.fixture(params=["main", "full", "fast"])
def hook(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Hook:
    """The hook, stdin in, exactly one JSON object out: each test runs it three ways.

    ``main``: ``tapgate hook claude-code`` through ``main`` in a worker thread
    (the fast path first, in process, then the full hook). ``full``: the same
    with the full hook alone, the reference. ``fast``: the command
    ``--print-command`` prints (``python -I -S`` and the fast path, handing
    what it does not answer to the full hook), as a real process. Every
    answer must be the same each way.
    """
    monkeypatch.setenv("TAPGATE_AGENT_TOKEN", TOKEN)
    if request.param == "full":
        full_hook_only(monkeypatch)
    if request.param == "fast":

        async def fast(url: str, payload: dict[str, Any] | str, *flags: str) -> dict[str, Any]:
            stdin = payload if isinstance(payload, str) else json.dumps(payload)
            code, answer = await subprocess_hook(url, stdin, *flags, command=FAST)
            assert code == 0
            return answer

        return fast

    async def call(url: str, payload: dict[str, Any] | str, *flags: str) -> dict[str, Any]:
        stdin = payload if isinstance(payload, str) else json.dumps(payload)
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        # The hook's watchdog leaves the process with os._exit when the server is slower
        # than --timeout plus its grace: in process, that would take the test runner (an
        # xdist worker) with it on a loaded machine. Here it fails this test instead.
        monkeypatch.setattr(os, "_exit", _watchdog_fired)
        # main() blocks while it waits for a human: run it beside the server's loop.
        code = await asyncio.to_thread(cli, "hook", "claude-code", "--url", url, *flags)
        out, err = capsys.readouterr()
        assert code == 0, err
        answer: dict[str, Any] = json.loads(out)
        return answer

    return call


async def subprocess_hook(
    url: str,
    payload: str,
    *flags: str,
    token: str = TOKEN,
    command: tuple[str, ...] = (TAPGATE, "hook", "claude-code"),
) -> tuple[int, dict[str, Any]]:
    """The installed ``tapgate`` script (or ``command``), as Claude Code runs it."""
    env = {**os.environ, "TAPGATE_AGENT_TOKEN": token}
    proc = await asyncio.create_subprocess_exec(
        *command,
        "--url",
        url,
        *flags,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(payload.encode()), 120)
    return proc.returncode or 0, json.loads(out)


# -- decided by policy at once ------------------------------------------------------------


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("tool", TOOLS)
async def test_policy_allow_answers_allow_at_once(
    served: Served, hook: Hook, event: str, tool: str
) -> None:
    allowed, _, _ = CASES[tool]
    answer = await hook(served.url, hook_input(event, tool, allowed))
    assert verdict(answer, event)[0] == "allow"
    assert await served.requests() == []  # nobody was asked


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("tool", TOOLS)
async def test_policy_deny_answers_deny_with_the_reason(
    served: Served, hook: Hook, event: str, tool: str
) -> None:
    _, denied, _ = CASES[tool]
    answer = await hook(served.url, hook_input(event, tool, denied))
    decision, reason = verdict(answer, event)
    assert decision == "deny"
    assert reason.startswith("tapgate: no ") and "policy.rules[" in reason
    assert await served.requests() == []


# -- asked a human ------------------------------------------------------------------------


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("tool", TOOLS)
async def test_an_ask_approved_by_a_line_tap_answers_allow(
    served: Served, hook: Hook, event: str, tool: str
) -> None:
    _, _, asked = CASES[tool]
    answer = asyncio.create_task(hook(served.url, hook_input(event, tool, asked)))
    request = await served.pending()
    await served.tap(request.id, "approve")
    decision, reason = verdict(await answer, event)
    assert decision == "allow"
    if event == "PreToolUse":
        assert reason == "tapgate: approved by alice"
    # The request is Claude Code's call as it is: tool name, input, session; agent from the token.
    assert (request.agent, request.tool, dict(request.arguments)) == ("claude", tool, asked)
    assert request.session == "7f3c2a9e-5b1d-4e8a-9c6f-0d2b4a6e8c10"
    assert (await served.app[GATE].get_request(request.id)).status == "approved"


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("tool", TOOLS)
async def test_an_ask_denied_with_a_reason_tells_claude_why(
    served: Served, hook: Hook, event: str, tool: str
) -> None:
    _, _, asked = CASES[tool]
    answer = asyncio.create_task(hook(served.url, hook_input(event, tool, asked)))
    request = await served.pending()
    await served.deny(request.id, "not during the release freeze")
    decision, reason = verdict(await answer, event)
    assert decision == "deny"
    assert reason == "tapgate: denied by alice: not during the release freeze"


async def test_a_deny_tap_in_line_answers_deny(served: Served, hook: Hook) -> None:
    _, _, asked = CASES["Bash"]
    answer = asyncio.create_task(hook(served.url, hook_input("PreToolUse", "Bash", asked)))
    await served.tap((await served.pending()).id, "deny")
    assert verdict(await answer, "PreToolUse") == ("deny", "tapgate: denied by alice")


# -- no decision in time ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "flags", "expected"),
    [
        ("PreToolUse", (), "deny"),
        ("PermissionRequest", (), "deny"),
        ("PreToolUse", ("--on-expired", "ask"), "ask"),
        ("PermissionRequest", ("--on-expired", "ask"), "ask"),
    ],
)
async def test_a_request_that_expires_gets_the_configured_verdict(
    served_manual: Served, hook: Hook, event: str, flags: tuple[str, ...], expected: str
) -> None:
    served, clock = served_manual, served_manual.clock
    assert clock is not None
    _, _, asked = CASES["mcp__github__create_issue"]
    payload = hook_input(event, "mcp__github__create_issue", asked)
    answer = asyncio.create_task(hook(served.url, payload, *flags))
    request = await served.pending()
    clock.advance(601)  # past the policy's 10 minutes
    decision, reason = verdict(await answer, event)
    assert decision == expected
    assert f"request {request.id} expired" in reason
    assert f"(--on-expired {expected})" in reason
    assert (await served.app[GATE].get_request(request.id)).status == "expired"


async def test_the_hook_timeout_withdraws_the_request(served: Served, hook: Hook) -> None:
    """A second, not less: the watchdog allows the timeout again for the answer, and on a loaded
    machine the withdrawal's round trip took longer than 0.3 s."""
    _, _, asked = CASES["Edit"]
    answer = await hook(served.url, hook_input("PreToolUse", "Edit", asked), "--timeout", "1")
    decision, reason = verdict(answer, "PreToolUse")
    assert decision == "deny"
    assert "nobody decided within 1s" in reason and "(--on-expired deny)" in reason
    [request] = await served.requests()
    assert request.status == "cancelled"  # a late tap can no longer approve it


# -- tapgate cannot decide -----------------------------------------------------------------


@pytest.mark.parametrize("command", [(TAPGATE, "hook", "claude-code"), FAST], ids=["main", "fast"])
async def test_an_unreachable_server_gets_the_configured_verdict(
    command: tuple[str, ...], closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}"  # nobody listens here
    bash = json.dumps(hook_input("PreToolUse", "Bash", CASES["Bash"][2]))
    mcp = json.dumps(hook_input("PermissionRequest", "mcp__github__create_issue", CASES["Bash"][2]))
    table = [
        (bash, (), "PreToolUse", "deny"),
        (mcp, (), "PermissionRequest", "deny"),
        (mcp, ("--on-error", "ask"), "PermissionRequest", "ask"),
        (bash, ("--on-error", "allow"), "PreToolUse", "allow"),
    ]
    # Real processes, all at once: each spends its retries (~2-4 s) before it gives up
    # (no outage window: riding out a restart is test_restart's).
    results = await asyncio.gather(
        *(subprocess_hook(url, p, *f, "--retry-for", "0", command=command) for p, f, _, _ in table)
    )
    for (_, flags, event, expected), (code, answer) in zip(table, results, strict=True):
        assert code == 0
        decision, reason = verdict(answer, event)
        assert decision == expected, (flags, answer)
        if reason:  # a PermissionRequest allow carries no text
            assert f"tapgate: server unreachable at {url} (ConnectError" in reason


async def test_a_wrong_token_is_denied_and_says_so(
    served: Served, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_TOKEN", "not-the-agent-token-0123456789")
    payload = hook_input("PermissionRequest", "Bash", CASES["Bash"][2])
    answer = await hook(served.url, payload, "--token-env", "OTHER_TOKEN")
    decision, reason = verdict(answer, "PermissionRequest")
    assert decision == "deny"
    assert f"the server at {served.url} refused the agent token (invalid bearer token)" in reason
    assert await served.requests() == []


async def test_a_missing_token_is_denied_and_says_so(served: Served, hook: Hook) -> None:
    payload = hook_input("PreToolUse", "Bash", CASES["Bash"][0])
    answer = await hook(served.url, payload, "--token-env", "TAPGATE_TEST_UNSET_TOKEN")
    decision, reason = verdict(answer, "PreToolUse")
    assert decision == "deny" and "no agent token" in reason


@pytest.mark.parametrize(
    ("stdin", "event", "problem"),
    [
        ("", "PreToolUse", "stdin is not JSON"),
        ('{"hook_event_name": "PreToolUse", "tool_name": "Ba', "PreToolUse", "not JSON"),
        ("[1, 2]", "PreToolUse", "not a JSON object"),
        ('{"hook_event_name": "Stop"}', "PreToolUse", "'Stop' is not PreToolUse"),
        ('{"hook_event_name": "PermissionRequest"}', "PermissionRequest", "tool_name"),
        (
            '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"}',
            "PreToolUse",
            "tool_input is not a JSON object",
        ),
    ],
)
async def test_malformed_stdin_is_denied_in_valid_json(
    hook: Hook, stdin: str, event: str, problem: str
) -> None:
    answer = await hook("http://127.0.0.1:9", stdin)  # never contacted
    decision, reason = verdict(answer, event)
    assert decision == "deny"
    assert reason.startswith("tapgate: could not read the hook input: ") and problem in reason


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (("--on-error", "maybe"), "argument --on-error: invalid choice: 'maybe'"),
        (("--timeout", "-5"), "must be a positive number of seconds"),
        (("--token", "secret-on-the-command-line"), "unrecognized arguments: --token"),
    ],
)
async def test_a_misconfigured_hook_command_still_answers_deny_in_json(
    hook: Hook, flags: tuple[str, ...], problem: str
) -> None:
    payload = hook_input("PermissionRequest", "Bash", CASES["Bash"][0])
    answer = await hook("http://127.0.0.1:9", payload, *flags)
    decision, reason = verdict(answer, "PermissionRequest")
    assert decision == "deny"
    assert "the hook command is misconfigured" in reason and problem in reason


async def test_absurdly_nested_input_is_denied_not_crashed(hook: Hook) -> None:
    """The model writes ``tool_input``: nesting that breaks ``json`` must not fail open."""
    nested = "[" * 100_000 + "]" * 100_000
    payload = (
        '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"a": '
        + nested
        + "}}"
    )
    answer = await hook("http://127.0.0.1:9", payload)
    decision, reason = verdict(answer, "PreToolUse")
    assert decision == "deny" and "could not read the hook input" in reason


async def test_credentials_in_the_url_never_reach_claude(hook: Hook) -> None:
    payload = hook_input("PreToolUse", "Bash", CASES["Bash"][0])
    answer = await hook("http://agent:s3cret-pass@127.0.0.1:9", payload, "--retry-for", "0")
    decision, reason = verdict(answer, "PreToolUse")
    assert decision == "deny" and "http://127.0.0.1:9" in reason
    assert "s3cret" not in json.dumps(answer)


def test_a_mistyped_hook_subcommand_still_answers_deny_in_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = json.dumps(hook_input("PreToolUse", "Bash", CASES["Bash"][0]))
    monkeypatch.setattr(sys, "stdin", io.StringIO(payload))
    assert cli("hook", "claud-code", "--url", "http://127.0.0.1:9") == 0
    decision, reason = verdict(json.loads(capsys.readouterr().out), "PreToolUse")
    assert decision == "deny" and "the hook command is misconfigured" in reason


# -- the installed script, as Claude Code runs it -------------------------------------------


@pytest.mark.parametrize("command", [(TAPGATE, "hook", "claude-code"), FAST], ids=["main", "fast"])
async def test_a_server_that_never_answers_cannot_outlast_the_hook(
    command: tuple[str, ...],
) -> None:
    """Claude Code lets a call through when a hook outlives its timeout: answer first."""

    async def hang(request: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hang)
    payload = json.dumps(hook_input("PreToolUse", "Bash", CASES["Bash"][2]))
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("")).rstrip("/")
        started = asyncio.get_running_loop().time()
        code, answer = await subprocess_hook(url, payload, "--timeout", "1", command=command)
        took = asyncio.get_running_loop().time() - started
    assert code == 0
    assert took < 8  # --timeout 1 plus its grace (1 s), not the requests' read timeouts
    decision, reason = verdict(answer, "PreToolUse")
    assert decision == "deny"
    # The full hook's watchdog, or (the fast path first, its read bounded by --timeout) the
    # read timeout it handed over: either way --on-error, well before Claude Code's timeout.
    assert "no answer from the server within 2s" in reason or "(ReadTimeout: " in reason
    assert "--on-error deny" in reason


async def test_the_installed_script_waits_for_a_tap(served: Served) -> None:
    payload = json.dumps(hook_input("PreToolUse", "Bash", CASES["Bash"][2]))
    answer = asyncio.create_task(subprocess_hook(served.url, payload))
    await served.tap((await served.pending()).id, "approve")
    code, out = await answer
    assert code == 0
    assert verdict(out, "PreToolUse") == ("allow", "tapgate: approved by alice")


async def test_the_installed_script_answers_a_policy_deny(served: Served) -> None:
    payload = json.dumps(hook_input("PermissionRequest", "Bash", CASES["Bash"][1]))
    code, out = await subprocess_hook(served.url, payload)
    assert code == 0
    decision, reason = verdict(out, "PermissionRequest")
    assert decision == "deny" and "rm -rf /" in reason


# -- the example config the docs point to ----------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "tool_input", "action"),
    [
        ("Bash", {"command": "git status"}, "allow"),
        ("Bash", {"command": "git status && git push --force origin main"}, "deny"),
        ("Bash", {"command": "npm install"}, "ask"),
        ("Read", {"file_path": "/work/app/README.md"}, "allow"),
        ("Read", {"file_path": "/work/app/.env"}, "deny"),
        (
            "Edit",
            {"file_path": "/work/app/src/main.py", "old_string": "a", "new_string": "b"},
            "ask",
        ),
        ("mcp__github__get_issue", {"owner": "acme", "repo": "web", "issue_number": 7}, "allow"),
        ("mcp__github__create_issue", {"owner": "acme", "repo": "web", "title": "x"}, "ask"),
        ("mcp__github__merge_pull_request", {"owner": "acme", "repo": "web"}, "ask"),
    ],
)
def test_the_example_config_decides_claude_codes_tools(
    monkeypatch: pytest.MonkeyPatch, tool: str, tool_input: dict[str, Any], action: str
) -> None:
    monkeypatch.setenv("TAPGATE_AGENT_TOKEN", TOKEN)
    policy = Policy(load_config(str(EXAMPLE)).policy_spec())
    decided = policy.evaluate(ToolCall(tool=tool, arguments=tool_input, agent="claude-code"))
    assert decided.action == action, decided.reason


async def test_content_the_model_chose_is_denied_even_with_on_error_allow(
    served: Served, hook: Hook
) -> None:
    """--on-error is for an unhealthy server; no tool input may be shaped into it."""
    huge = hook_input("PreToolUse", "Bash", {"command": "rm -rf ~ #" + "x" * 1_100_000})
    decision, reason = verdict(await hook(served.url, huge, "--on-error", "allow"), "PreToolUse")
    assert decision == "deny" and "413" in reason and "--on-error" not in reason
    broken = '{"hook_event_name": "PreToolUse", "tool_name": "Ba'
    decision, _ = verdict(await hook(served.url, broken, "--on-error", "allow"), "PreToolUse")
    assert decision == "deny"
    assert await served.requests() == []


def _watchdog_fired(code: int) -> NoReturn:
    raise AssertionError(f"the hook's watchdog gave up (os._exit({code})) in process")
