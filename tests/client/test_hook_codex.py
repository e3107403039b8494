"""``tapgate hook codex``: Codex's ``PermissionRequest`` hook JSON in, a decision out.

Every test runs the real CLI entry (``main`` in a worker thread, with and
without its in-process fast path) or the command ``--print-command`` puts in
Codex's ``hooks.json`` (``python -I -S`` and the fast path, as a real
process), against the real server (``serve`` of the Claude Code hook's
tests: ``build_app`` on a loopback port, a SQLite file, LINE taps).

The inputs are shaped as Codex writes them (``permission-request.command.
input.schema.json`` of openai/codex's ``codex-rs/hooks``) and every answer is
held to the output Codex reads (``permission-request.command.output``, read
by ``engine/output_parser.rs``): ``PermissionRequest``'s shape, a deny with a
non-empty message, never ``updatedInput``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Coroutine
from typing import Any, NoReturn, Protocol

import pytest

from tapgate.server.keys import GATE
from tests.client.test_fast_hook import imported_modules, spawn
from tests.client.test_hook_claude_code import (
    TAPGATE,
    TOKEN,
    Served,
    cli,
    full_hook_only,
    serve,
    subprocess_hook,
)
from tests.test_conventions import _loaded_by as loaded_by

SESSION = "019a3c4e-7f21-7d30-9b8e-2c5d0e6f1a42"
ALLOWED = {"command": "git status", "description": "Show the working tree"}
DENIED = {"command": "git status && rm -rf /", "description": "Clean up"}
ASKED = {"command": "make deploy", "description": "Deploy the app"}
MAIN = (TAPGATE, "hook", "codex")


def codex_input(tool_input: dict[str, Any], tool: str = "Bash", **extra: Any) -> dict[str, Any]:
    """A hook input as Codex writes it on the hook's stdin (every required field)."""
    return {
        "session_id": SESSION,
        "turn_id": "019a3c4e-8a02-7c11-a4f3-5d6e7f809a1b",
        "transcript_path": "/home/dev/.codex/sessions/2026/05/01/rollout-019a3c4e.jsonl",
        "cwd": "/work/app",
        "hook_event_name": "PermissionRequest",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": tool_input,
        **extra,
    }


def codex_verdict(answer: dict[str, Any]) -> tuple[str, str]:
    """The verdict and its text, after holding the answer to the output Codex reads."""
    if "hookSpecificOutput" not in answer:  # no decision: Codex shows its own prompt
        assert set(answer) == {"systemMessage"}, answer
        return "ask", answer["systemMessage"]
    assert set(answer) == {"hookSpecificOutput"}, answer
    out = answer["hookSpecificOutput"]
    assert set(out) == {"hookEventName", "decision"} and out["hookEventName"] == "PermissionRequest"
    decision = out["decision"]
    if decision["behavior"] == "allow":
        assert decision == {"behavior": "allow"}  # no updatedInput: Codex refuses it
        return "allow", ""
    assert decision["behavior"] == "deny" and set(decision) == {"behavior", "message"}
    assert decision["message"].strip()  # an empty one reads as Codex's own generic text
    return "deny", decision["message"]


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url) as s:
        yield s


class Hook(Protocol):
    def __call__(
        self, url: str, payload: dict[str, Any] | str, *flags: str
    ) -> Coroutine[Any, Any, dict[str, Any]]: ...


async def printed_command(*flags: str) -> tuple[str, ...]:
    """The command ``--print-command`` puts in Codex's ``hooks.json``, split as a shell would."""
    printed, _ = await spawn(*MAIN, "--print-command", *flags)
    [group] = json.loads(printed)["hooks"]["PermissionRequest"]
    [handler] = group["hooks"]
    return tuple(shlex.split(handler["command"]))


@pytest.fixture(params=["main", "full", "fast"])
def hook(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Hook:
    """The hook run three ways, as ``test_hook_claude_code``'s fixture; the same answers."""
    monkeypatch.setenv("TAPGATE_AGENT_TOKEN", TOKEN)
    if request.param == "full":
        full_hook_only(monkeypatch)
    if request.param == "fast":

        async def fast(url: str, payload: dict[str, Any] | str, *flags: str) -> dict[str, Any]:
            stdin = payload if isinstance(payload, str) else json.dumps(payload)
            command = await printed_command()
            code, answer = await subprocess_hook(url, stdin, *flags, command=command)
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
        code = await asyncio.to_thread(cli, "hook", "codex", "--url", url, *flags)
        out, err = capsys.readouterr()
        assert code == 0, err
        answer: dict[str, Any] = json.loads(out)
        return answer

    return call


# -- decided by policy at once, shell commands parsed as Bash's ----------------------------


async def test_a_policy_allow_answers_allow_and_asks_nobody(served: Served, hook: Hook) -> None:
    assert codex_verdict(await hook(served.url, codex_input(ALLOWED))) == ("allow", "")
    assert await served.requests() == []


async def test_a_policy_deny_of_one_command_in_a_chain_denies_with_the_reason(
    served: Served, hook: Hook
) -> None:
    decision, reason = codex_verdict(await hook(served.url, codex_input(DENIED)))
    assert decision == "deny"
    assert reason.startswith("tapgate: no rm -rf") and "policy.rules[1]" in reason


# -- asked a human ---------------------------------------------------------------------------


async def test_an_approval_in_line_answers_allow_for_codexs_call(
    served: Served, hook: Hook
) -> None:
    answer = asyncio.create_task(hook(served.url, codex_input(ASKED)))
    request = await served.pending()
    await served.tap(request.id, "approve")
    assert codex_verdict(await answer) == ("allow", "")
    assert (request.agent, request.tool, dict(request.arguments)) == ("claude", "Bash", ASKED)
    assert request.session == SESSION  # "allow for this session" means this Codex thread
    assert (await served.app[GATE].get_request(request.id)).status == "approved"


async def test_a_denial_with_a_reason_tells_codex_why(served: Served, hook: Hook) -> None:
    answer = asyncio.create_task(hook(served.url, codex_input(ASKED)))
    await served.deny((await served.pending()).id, "not during the release freeze")
    assert codex_verdict(await answer) == (
        "deny",
        "tapgate: denied by alice: not during the release freeze",
    )


async def test_a_tool_codex_adds_reaches_the_policy_by_its_own_name(
    served: Served, hook: Hook
) -> None:
    """``NetworkAccess`` (and whatever a later Codex asks about) is sent as it is named."""
    payload = codex_input({"command": "curl https://example.com"}, tool="NetworkAccess")
    answer = asyncio.create_task(hook(served.url, payload))
    request = await served.pending()
    assert request.tool == "NetworkAccess"
    await served.tap(request.id, "deny")
    assert codex_verdict(await answer) == ("deny", "tapgate: denied by alice")


async def test_the_hook_timeout_withdraws_the_request(served: Served, hook: Hook) -> None:
    """A second, not less: the watchdog allows the timeout again for the answer, and on a loaded
    machine the withdrawal's round trip took longer than 0.3 s."""
    answer = await hook(served.url, codex_input(ASKED), "--timeout", "1")
    decision, reason = codex_verdict(answer)
    assert decision == "deny" and "nobody decided within 1s" in reason
    [request] = await served.requests()
    assert request.status == "cancelled"


# -- tapgate cannot decide: a deny that says why, never a silent allow -----------------------


@pytest.mark.parametrize("how", ["main", "fast"])
async def test_an_unreachable_server_is_denied_with_the_reason(how: str, closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"  # nobody listens here
    command = MAIN if how == "main" else await printed_command()
    payload = json.dumps(codex_input(ASKED))
    table = [((), "deny"), (("--on-error", "ask"), "ask")]
    results = await asyncio.gather(
        *(subprocess_hook(url, payload, *f, "--retry-for", "0", command=command) for f, _ in table)
    )
    for (flags, expected), (code, answer) in zip(table, results, strict=True):
        assert code == 0
        decision, reason = codex_verdict(answer)
        assert decision == expected, (flags, answer)
        assert f"tapgate: server unreachable at {url} (ConnectError" in reason
    assert (
        "asking in the agent's own prompt instead (--on-error ask)"
        in results[1][1]["systemMessage"]
    )


async def test_a_wrong_token_is_denied_and_says_so(
    served: Served, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_TOKEN", "not-the-agent-token-0123456789")
    answer = await hook(served.url, codex_input(ASKED), "--token-env", "OTHER_TOKEN")
    decision, reason = codex_verdict(answer)
    assert decision == "deny" and "refused the agent token" in reason
    assert await served.requests() == []


async def test_a_missing_token_is_denied_and_says_so(
    served: Served, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    answer = await hook(served.url, codex_input(ASKED), "--token-env", "UNSET_TOKEN")
    decision, reason = codex_verdict(answer)
    assert decision == "deny" and "no agent token" in reason


@pytest.mark.parametrize(
    ("stdin", "problem"),
    [
        ("", "stdin is not JSON"),
        ("not json", "stdin is not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps(codex_input(ASKED, tool="")), "tool_name is missing"),
        (
            '{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": '
            + "[" * 100_000
            + "]" * 100_000
            + "}",
            "stdin is not JSON",
        ),
    ],
    ids=["empty", "garbage", "array", "no-tool", "nested"],
)
async def test_unreadable_input_is_denied_in_codexs_shape(
    hook: Hook, stdin: str, problem: str
) -> None:
    """Even input with no event to answer gets ``PermissionRequest``'s deny, which Codex reads."""
    decision, reason = codex_verdict(await hook("http://127.0.0.1:9", stdin))
    assert decision == "deny"
    assert reason.startswith("tapgate: could not read the hook input") and problem in reason


async def test_another_events_input_is_a_misconfigured_hook_and_denied(hook: Hook) -> None:
    payload = {**codex_input(ASKED), "hook_event_name": "PreToolUse"}
    decision, reason = codex_verdict(await hook("http://127.0.0.1:9", payload))
    assert decision == "deny" and "answers Codex's PermissionRequest event" in reason


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (("--on-error", "maybe"), "invalid choice: 'maybe'"),
        (("--token", "secret-on-the-command-line"), "unrecognized arguments: --token"),
    ],
)
async def test_a_misconfigured_command_is_denied_in_codexs_shape(
    hook: Hook, flags: tuple[str, ...], problem: str
) -> None:
    answer = await hook("http://127.0.0.1:9", "garbage", *flags)
    decision, reason = codex_verdict(answer)
    assert decision == "deny" and "misconfigured" in reason and problem in reason


# -- Codex's config and the fast path ---------------------------------------------------------


async def test_print_command_prints_the_hooks_json_codex_reads(served: Served) -> None:
    printed, _ = await spawn(*MAIN, "--print-command", "--timeout", "120", "--on-error=ask")
    document = json.loads(printed)
    assert set(document) == {"hooks"} and set(document["hooks"]) == {"PermissionRequest"}
    [group] = document["hooks"]["PermissionRequest"]
    assert set(group) == {"hooks"}  # no matcher: every tool Codex asks about
    [handler] = group["hooks"]
    assert handler["type"] == "command" and handler["statusMessage"]
    assert handler["timeout"] > 120 + 15  # Codex's limit lies past the hook's last answer
    command = shlex.split(handler["command"])
    assert command[1:3] == ["-I", "-S"] and command[3].endswith("_codex_hook.py")
    assert command[4:] == ["--timeout", "120", "--on-error=ask"]
    code, answer = await subprocess_hook(
        served.url, json.dumps(codex_input(ALLOWED)), command=tuple(command)
    )
    assert (code, codex_verdict(answer)) == (0, ("allow", ""))


async def test_the_fast_path_imports_only_built_in_modules(served: Served) -> None:
    command = await printed_command()
    out, err = await spawn(
        *command[:3],
        "-X",
        "importtime",
        *command[3:],
        "--url",
        served.url,
        stdin=json.dumps(codex_input(ALLOWED)),
    )
    assert codex_verdict(json.loads(out)) == ("allow", "")
    imported = imported_modules(err)
    assert {"_json", "_socket"} <= imported
    for heavy in ("json", "re", "socket", "typing", "site", "tapgate", "asyncio"):
        assert heavy not in imported, sorted(imported)


def test_importing_the_codex_hook_loads_no_server_stack() -> None:
    loaded = loaded_by("import tapgate.client._codex_hook, tapgate.cli.codex_hook")
    assert not {"aiohttp", "sqlalchemy", "pydantic", "asyncio", "httpx", "yaml"} & loaded


def _watchdog_fired(code: int) -> NoReturn:
    raise AssertionError(f"the hook's watchdog gave up (os._exit({code})) in process")
