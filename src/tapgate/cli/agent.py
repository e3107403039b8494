"""The agent-side commands of the CLI: ``tapgate hook claude-code`` and ``tapgate run``.

Argument wiring only: what they do lives in :mod:`tapgate.client`
(``claude_code_hook``, ``run_approved``), next to the remote gates they use.
Both find the server in ``--url`` / ``$TAPGATE_URL`` and the agent token in an
environment variable, never on the command line, where ``ps`` and shell
history would show it (the options: :mod:`tapgate.cli.agent_options`).

The hook's contract with Claude Code is "exit 0, JSON on stdout" whatever
happens, so even a mistyped flag in Claude Code's settings is answered with a
JSON deny that names the mistake, rather than argparse's exit status 2.

The client is imported inside each command, and by name from
``tapgate.client`` (whose names load on first use), so the hook loads the
hook's modules, ``tapgate run`` the runner's, and neither loads httpx.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from tapgate.cli.agent_options import (
    Parser,
    connection_options,
    retry_option,
    seconds_arg,
    submitted_arg,
)
from tapgate.client._hook_answer import DEFAULT_URL, TOKEN_ENV

if TYPE_CHECKING:
    from tapgate.cli.commands import Command

__all__ = [
    "DEFAULT_URL",
    "HOOK_EPILOG",
    "RUN_EPILOG",
    "TOKEN_ENV",
    "add_agent_commands",
    "hook_claude_code",
    "hook_misconfigured",
    "run",
]


RUN_EPILOG = """\
exit status:
  the command's  approved (or allowed by policy) and run; killed by signal N: 128 + N
  2              no command, or a bad flag
  69             the tapgate server is unreachable or failed (EX_UNAVAILABLE)
  71             --sandbox: the sandbox cannot be applied here; nothing ran (EX_OSERR)
  75             nobody decided in time, or --timeout ran out (EX_TEMPFAIL)
  77             denied, by policy or by an approver (EX_NOPERM)
  78             no agent token, or the server refused it (EX_CONFIG)
  126 / 127      approved, but the command cannot be executed / was not found
  130 / 143      Ctrl-C / SIGTERM while waiting: the request was cancelled, nothing ran
tapgate's own reasons are printed on stderr as "tapgate: ..."."""

HOOK_EPILOG = """\
exit status:
  0  always: the decision (allow, deny or ask) is the JSON on stdout, as the agent
     expects; a server that cannot be reached answers --on-error, and a mistyped flag
     is a JSON deny that names the mistake."""


class _HookParser(Parser):
    """An argument parser whose errors are hook answers (JSON deny, exit status 0)."""

    def error(self, message: str) -> NoReturn:
        from tapgate.client import hook_refusal

        self.print_usage(sys.stderr)
        problem = f"the hook command is misconfigured ({message})"
        refusal = hook_refusal(_read_stdin(interactive=False), problem)
        _answer(_translation(self.prog)(refusal))
        raise SystemExit(0)


def _translation(prog: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What turns the Claude Code hook's answer into the answer of the hook ``prog`` runs."""
    if prog.endswith(" codex"):
        from tapgate.client._codex_hook import codex_output

        return codex_output
    return lambda answer: answer


def add_agent_commands(sub: Any, *, hook: Command, run: Command, codex: Command) -> None:
    """Add ``hook claude-code``, ``hook codex`` and ``run`` to the CLI's subcommands."""
    hook_parser = sub.add_parser(
        "hook",
        help="answer an agent's hook (Claude Code, Codex) with tapgate",
        epilog=HOOK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hooks = hook_parser.add_subparsers(dest="hook_command", required=True, parser_class=_HookParser)
    for name, what, entry in (
        ("claude-code", "a Claude Code PreToolUse / PermissionRequest hook", hook),
        ("codex", "a Codex PermissionRequest hook", codex),
    ):
        _add_hook(hooks, name, f"{what}: hook JSON in, decision out", entry)
    _add_run(sub, run)


def _add_hook(hooks: Any, name: str, help_text: str, entry: Command) -> None:
    """One agent's hook command: the same flags for every agent, read the same way."""
    from tapgate.client import DEFAULT_HOOK_TIMEOUT

    agent = "Codex" if name == "codex" else "Claude Code"
    parser = hooks.add_parser(
        name,
        help=help_text,
        allow_abbrev=False,  # "--token X" must be an error, not --token-env X
        epilog=HOOK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    connection_options(parser)
    parser.add_argument(
        "--on-error",
        choices=("deny", "ask", "allow"),
        default="deny",
        help="the answer when tapgate cannot decide: unreachable, bad token, bad input "
        "(default: deny)",
    )
    parser.add_argument(
        "--on-expired",
        choices=("deny", "ask"),
        default="deny",
        help="the answer when nobody decides in time (default: deny)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds_arg,
        default=DEFAULT_HOOK_TIMEOUT,
        help="seconds to wait for an approver (default: %(default)g); keep it below the "
        f"hook's timeout in {agent}'s settings",
    )
    retry_option(parser)
    parser.add_argument(
        "--print-command",
        action="store_true",
        help=f"print the fast command line for {agent}'s settings (these flags, started "
        "in a few ms with python -I -S) and exit",
    )
    # What the fast path's submit got back (tapgate.client._fast_hook): read, not sent again.
    parser.add_argument("--submitted", type=submitted_arg, help=argparse.SUPPRESS)
    translate = _translation(parser.prog)
    parser.set_defaults(func=entry, reject_extra=lambda extra: _hook_extra(extra, translate))


def _add_run(sub: Any, run: Command) -> None:
    run_parser = sub.add_parser(
        "run",
        help="run a command only when tapgate approves it",
        allow_abbrev=False,
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    connection_options(run_parser)
    run_parser.add_argument(
        "--tool", default="shell", help="tool name sent to tapgate (default: shell)"
    )
    run_parser.add_argument(
        "--session", help="session id, e.g. the CI pipeline id (session grants)"
    )
    run_parser.add_argument(
        "--timeout", type=seconds_arg, help="seconds to wait (default: the request's own timeout)"
    )
    run_parser.add_argument(
        "--sandbox",
        nargs="?",
        const="strict",
        choices=("strict", "best-effort"),
        help="run the command under bubblewrap as the tool's config on the server says; "
        "refuse to run (status 71) where that is impossible, or with =best-effort warn and "
        "run unsandboxed",
    )
    retry_option(run_parser)
    run_parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...]")
    run_parser.set_defaults(func=run)


HOOK_GRACE = 15.0
"""Seconds past ``--timeout`` after which the hook answers whatever the server is doing.

Claude Code cancels a hook that outlives its own ``timeout`` and lets the tool
call through, so a server that accepts connections and never answers (each
retried request waits its read timeout) must not keep the hook past it. The
docs ask for Claude Code's ``timeout`` at least 30 s above ``--timeout``. A
short ``--timeout`` gets a grace as short as itself.
"""


def hook_claude_code(args: argparse.Namespace) -> int:
    """``tapgate hook claude-code``: answer one hook call, within its time limit, exit 0."""
    from tapgate.client import claude_code_hook

    if args.print_command:
        return _print_fast_command(getattr(args, "command_line", []))
    return answer_hook(args, claude_code_hook, _translation("tapgate hook claude-code"))


def answer_hook(
    args: argparse.Namespace,
    decide: Callable[..., dict[str, Any]],
    translate: Callable[[dict[str, Any]], dict[str, Any]],
) -> int:
    """Answer one hook call with ``decide`` (``claude_code_hook``'s signature), exit 0.

    ``translate``: what turns the Claude Code hook's own answers (a fallback,
    a refusal) into the agent's.
    """
    from tapgate.client import hook_fallback, hook_refusal

    raw = _read_stdin()
    answered = threading.Lock()  # held by whoever writes the one answer
    limit = args.timeout + min(HOOK_GRACE, args.timeout)

    def give_up() -> None:
        problem = f"no answer from the server within {limit:g}s"
        if answered.acquire(blocking=False):
            _answer(translate(hook_fallback(raw, args.on_error, problem, "--on-error")))
            os._exit(0)  # the main thread is stuck in I/O: leave without it

    watchdog = threading.Timer(limit, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        answer = decide(
            raw,
            url=args.url,
            token=os.environ.get(args.token_env),
            on_error=args.on_error,
            on_expired=args.on_expired,
            timeout=args.timeout,
            retry_for=args.retry_for,
            submitted=args.submitted,
        )
    except Exception as exc:
        answer = translate(hook_refusal(raw, f"internal error ({type(exc).__name__})"))
    watchdog.cancel()
    if answered.acquire(blocking=False):
        _answer(answer)
    return 0


def _print_fast_command(command_line: Sequence[str]) -> int:
    """Print the hook's fast command line: this interpreter, ``-I -S``, the fast path, the flags.

    The flags are the ones given here, already checked by this parser; the
    fast path hands whatever it does not answer back to this command.
    """
    import shlex

    from tapgate.client._fast_hook import SCRIPT

    flags = [flag for flag in command_line[2:] if flag != "--print-command"]
    print(shlex.join([sys.executable, "-I", "-S", SCRIPT, *flags]))
    return 0


def hook_misconfigured(problem: str) -> int:
    """Answer a hook command line argparse refused (a mistyped subcommand): deny, exit 0."""
    from tapgate.client import hook_refusal

    _answer(hook_refusal(_read_stdin(interactive=False), f"the hook command is {problem}"))
    return 0


def _hook_extra(extra: Sequence[str], translate: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    from tapgate.client import hook_refusal

    problem = f"the hook command is misconfigured (unrecognized arguments: {' '.join(extra)})"
    _answer(translate(hook_refusal(_read_stdin(interactive=False), problem)))
    return 0


def run(args: argparse.Namespace) -> int:
    """``tapgate run -- COMMAND``: run the command only when tapgate approves it."""
    from tapgate.client import EXIT_CONFIG, run_approved
    from tapgate.gate.models import CONTACT_TOOL

    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if args.tool == CONTACT_TOOL:
        sys.stderr.write(f"tapgate: --tool {CONTACT_TOOL} is reserved for questions to a human\n")
        return 2
    token = os.environ.get(args.token_env)
    if not token:
        sys.stderr.write(f"tapgate: no agent token: set ${args.token_env}\n")
        return EXIT_CONFIG
    return run_approved(
        argv,
        url=args.url,
        token=token,
        tool=args.tool,
        session=args.session,
        timeout=args.timeout,
        sandbox=args.sandbox,
        retry_for=args.retry_for,
    )


def _read_stdin(*, interactive: bool = True) -> str:
    from tapgate.cli.quick_hook import hook_input

    return hook_input(interactive=interactive)


def _answer(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
