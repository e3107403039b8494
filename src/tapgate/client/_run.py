"""``tapgate run``: run a command only when tapgate approves it.

The command line is sent as ``{"command": shlex.join(argv)}``, so a tool
configured with ``shell: command`` is judged by the shell-aware policy
(``git status && rm -rf /`` is two commands, hazards are never auto-allowed).
What runs is ``argv`` itself, without a shell: the approved text and the
executed program cannot differ by a shell's interpretation.

An approver may edit the command before approving it. The original never
runs then; the edited text runs only if it is a plain command line that
``shlex`` splits and joins back to exactly the approved text (quoted words,
no operators a shell would read differently, no leading assignment), else
``run`` refuses with status 65 and says why.

Exit status: the command's own (a signal ``N`` gives ``128 + N``), or one of
tapgate's, taken from ``sysexits.h`` where the meaning matches so that they
stay clear of the 1, 2, 126, 127 and 128+ that commands and shells use:

==== =================================================================
69   the tapgate server is unreachable or failed (``EX_UNAVAILABLE``)
65   approved only as an approver edited it, and the edit cannot be run as an
     exact command line (``EX_DATAERR``): nothing runs, neither edit nor original
75   nobody decided in time: the request expired (``EX_TEMPFAIL``)
77   denied, by policy or by an approver (``EX_NOPERM``)
71   ``--sandbox``: the command cannot be confined here (``EX_OSERR``)
78   no agent token, or the server refused it (``EX_CONFIG``)
126  approved, but the command could not be executed
127  approved, but the command was not found
130  interrupted (Ctrl-C) while waiting; the request was cancelled
143  terminated (SIGTERM) while waiting; the request was cancelled
==== =================================================================
"""

from __future__ import annotations

import contextlib
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TextIO

from tapgate.client._ask import decide, describe, failure, withdraw
from tapgate.client._errors import SandboxUnavailable, Unauthorized
from tapgate.client._lean import connect
from tapgate.client._plans import SyncCalls
from tapgate.client._retrying import DEFAULT_RETRY_FOR
from tapgate.client._sandbox import EXIT_NO_SANDBOX, Sandbox, SandboxMode, confine
from tapgate.client._signals import Signals, Stopped, exception_for
from tapgate.client._waiting import Waiting, countdown_line
from tapgate.errors import TapgateError
from tapgate.gate.models import Decision, Request, ToolCall

__all__ = [
    "EXIT_CANNOT_EXECUTE",
    "EXIT_CONFIG",
    "EXIT_DENIED",
    "EXIT_EDITED",
    "EXIT_EXPIRED",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_NO_SANDBOX",
    "EXIT_UNAVAILABLE",
    "countdown_line",
    "run_approved",
]

EXIT_EDITED = 65
EXIT_UNAVAILABLE = 69
EXIT_EXPIRED = 75
EXIT_DENIED = 77
EXIT_CONFIG = 78
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
EXIT_INTERRUPTED = 130


def run_approved(
    argv: Sequence[str],
    *,
    url: str,
    token: str | None,
    tool: str = "shell",
    session: str | None = None,
    timeout: float | None = None,
    stderr: TextIO | None = None,
    sandbox: SandboxMode | None = None,
    bwrap: str = "bwrap",
    retry_for: float = DEFAULT_RETRY_FOR,
) -> int:
    """Ask tapgate about ``argv`` as tool ``tool``, run it if allowed; the exit status.

    ``timeout`` bounds the wait (the request is then withdrawn, status 75);
    without it the server's request timeout decides. tapgate's own messages
    go to ``stderr``; while waiting on a terminal a countdown is drawn there.
    ``sandbox`` runs the command under ``bwrap`` as the tool's server-side
    config says (:mod:`tapgate.client._sandbox`), checked before anyone is asked.
    A server that fails or goes away (a restart) is retried for ``retry_for``
    seconds, within ``timeout`` and the request's deadline, before status 69.
    """
    err = stderr if stderr is not None else sys.stderr
    if not argv:
        return _fail(err, "no command given (tapgate run -- COMMAND ...)", 2)
    if not token:
        return _fail(err, "no agent token (set TAPGATE_AGENT_TOKEN)", EXIT_CONFIG)
    if _ASSIGNMENT.match(argv[0]):
        # shlex.join leaves "A=1" unquoted: the policy would judge "A=1 cmd" as
        # an assignment and `cmd`, while the program run is one named "A=1".
        return _fail(err, f"refusing to run a program named like an assignment: {argv[0]}", 2)
    box: Sandbox | None = None
    if sandbox is not None:
        gate = connect(url, token, retry_for=retry_for)
        box_or_status = _confine(err, url, gate, tool=tool, mode=sandbox, bwrap=bwrap)
        if isinstance(box_or_status, int):
            return box_or_status
        box = box_or_status
    command = shlex.join(argv)
    call = ToolCall(tool=tool, arguments={"command": command}, session=session)
    bound = retry_for if timeout is None else min(retry_for, timeout)
    refusal = _ask(err, url, token, call, timeout, retry_for=bound)
    if isinstance(refusal, int):
        return refusal
    return _execute(argv if refusal is None else refusal, err, box)


def _confine(
    err: TextIO, url: str, gate: SyncCalls, *, tool: str, mode: SandboxMode, bwrap: str
) -> Sandbox | int | None:
    """The sandbox for ``tool`` (``None``: best-effort without one), or tapgate's exit status."""
    try:
        with gate:
            return confine(mode, lambda: gate.sandbox(tool), bwrap=bwrap, err=err)
    except SandboxUnavailable as exc:
        return _fail(
            err, f"cannot sandbox the command, not running it: {exc.reason}", EXIT_NO_SANDBOX
        )
    except Unauthorized as exc:
        return _fail(err, failure(url, exc), EXIT_CONFIG)
    except TapgateError as exc:
        return _fail(err, failure(url, exc), EXIT_UNAVAILABLE)
    except KeyboardInterrupt:
        return _fail(err, "interrupted (Ctrl-C) before asking", EXIT_INTERRUPTED)


def _ask(
    err: TextIO, url: str, token: str, call: ToolCall, timeout: float | None, *, retry_for: float
) -> int | list[str] | None:
    """Wait for the decision on ``call``: ``None`` to run it, the edited argv, or an exit status."""
    waiting = Waiting(err, str(call.arguments["command"]), timeout)
    signals = Signals(err)

    def pending(request: Request) -> None:
        waiting.start(request)
        signals.release()  # we know what to cancel now: a held Ctrl-C acts from here

    try:
        with signals, connect(url, token, retry_for=retry_for) as gate:
            decision = decide(gate, call, timeout=timeout, on_pending=pending)
            signals.release()  # decided at once: a held Ctrl-C still stops the command
    except (KeyboardInterrupt, Stopped) as stop:
        waiting.stop()
        how, status = _how(stop)
        if signals.unanswered:
            return _fail(err, f"{how} before the server answered{_MAYBE_LEFT}", status)
        return _interrupted(err, url, token, waiting.request, how=how, status=status)
    except Unauthorized as exc:
        return _fail(err, failure(url, exc), EXIT_CONFIG)
    except TapgateError as exc:
        if signals.held is not None:  # stopped while the server failed us: say both
            how, status = _how(exception_for(signals.held))
            return _fail(err, f"{how}; {failure(url, exc)}{_MAYBE_LEFT}", status)
        return _fail(err, failure(url, exc), EXIT_UNAVAILABLE)
    finally:
        waiting.stop()
    return _refusal(err, decision, timeout, asked=waiting.request is not None)


def _refusal(
    err: TextIO, decision: Decision | None, timeout: float | None, *, asked: bool
) -> int | list[str] | None:
    """The exit status when ``decision`` does not let the command run, else ``None``.

    An edited approval gives the edited argv instead, or exit status 65.
    """
    if decision is None:
        return _fail(err, f"nobody decided within {timeout:g}s; request withdrawn", EXIT_EXPIRED)
    if not decision.allowed and decision.status == "expired":
        return _fail(err, f"request expired: {decision.reason}", EXIT_EXPIRED)
    if not decision.allowed:
        return _fail(err, f"denied: {describe(decision)}", EXIT_DENIED)
    if decision.edited:
        return _edited_argv(err, decision)
    if asked:  # a human approved: say who, before the command's output starts
        err.write(f"tapgate: {describe(decision)}\n")
        err.flush()
    return None


def _edited_argv(err: TextIO, decision: Decision) -> int | list[str]:
    """The argv of an edited approval, or status 65 when it is no exact command line."""
    edited = decision.arguments or {}
    command = edited.get("command")
    why = None
    argv: list[str] = []
    if set(edited) != {"command"} or not isinstance(command, str):
        why = "the edit changed more than the command line"
    else:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            why = f"the edited command cannot be split into words ({exc})"
    if why is None and (not argv or shlex.join(argv) != command):
        why = "the edited command is not an exact command line (a shell would read it differently)"
    if why is None and _ASSIGNMENT.match(argv[0]):
        why = "the edited command starts with an assignment"
    if why is not None:
        return _fail(err, f"approved only as edited, and {why}; not running anything", EXIT_EDITED)
    err.write(f"tapgate: {describe(decision)}; running the command as edited\n")
    err.flush()
    return argv


def _interrupted(
    err: TextIO, url: str, token: str, request: Request | None, *, how: str, status: int
) -> int:
    """Stopped while waiting: withdraw the request (on a fresh connection), never run."""
    if request is None:
        return _fail(err, how, status)
    try:
        # The interrupted long-poll may have left its connection half-read: a new pool.
        with connect(url, token, retries=0, retry_for=0) as gate:
            late = withdraw(gate, request.id, f"{how} by the user of tapgate run", strict=True)
    except (KeyboardInterrupt, Stopped):
        return _fail(err, f"{how}: request {request.id} not run (and not cancelled)", status)
    except TapgateError as exc:
        note = f" (and not cancelled: {failure(url, exc)}; it expires on its own)"
        return _fail(err, f"{how}: request {request.id} not run{note}", status)
    note = f"; it was already {late.status}" if late is not None else " and cancelled"
    return _fail(err, f"{how}: request {request.id} not run{note}", status)


_MAYBE_LEFT = "; a request it may have made was not withdrawn (it expires on its own)"


def _how(stop: BaseException) -> tuple[str, int]:
    """What to call a stop and its exit status: Ctrl-C 130, a signal N 128 + N."""
    if isinstance(stop, Stopped):
        return "terminated", stop.status
    return "interrupted (Ctrl-C)", EXIT_INTERRUPTED


def _execute(argv: Sequence[str], err: TextIO, box: Sandbox | None = None) -> int:
    """Run ``argv`` (inside ``box``, if any) with tapgate's stdio; its status, shell-style.

    SIGTERM and SIGHUP are forwarded from *before* the child is spawned: one
    arriving in between is handed on once it exists, so stopping tapgate never
    orphans a running command.
    """
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        if child is None:
            early.append(signum)
        else:
            child.send_signal(signum)

    with _forwarding(forward):
        try:
            wrapped = list(argv) if box is None else box.command(argv)
            child = subprocess.Popen(wrapped)  # noqa: S603 - argv is what was approved
        except FileNotFoundError:
            return _fail(err, f"command not found: {argv[0]}", EXIT_NOT_FOUND)
        except OSError as exc:
            return _fail(err, f"cannot execute {argv[0]}: {exc.strerror}", EXIT_CANNOT_EXECUTE)
        for signum in early:
            child.send_signal(signum)
        while True:
            try:
                status = child.wait()
                break
            except KeyboardInterrupt:
                continue  # the terminal sent SIGINT to the child too: its exit decides
    return 128 - status if status < 0 else status


@contextlib.contextmanager
def _forwarding(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """Route SIGTERM and SIGHUP to ``handler``, as a CI runner stopping a job expects."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set in the main thread (tests call from others)
        return
    # A signal the caller ignores (nohup, `&` in a shell without job control)
    # stays ignored: handling it here would reset it to the default in the child.
    wanted = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) != signal.SIG_IGN]
    previous = {s: signal.signal(s, handler) for s in wanted}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*\+?=")


def _fail(err: TextIO, message: str, status: int) -> int:
    err.write(f"tapgate: {message}\n")
    err.flush()
    return status
