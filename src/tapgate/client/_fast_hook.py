"""The Claude Code hook's fast path: a script that starts in a few milliseconds.

Claude Code starts the hook for every tool call, and most calls are allowed
by policy at once, so what the user feels is a process start. The
``tapgate`` console script cannot be cheap: ``site`` reads every ``.pth``
file, pip's script imports ``re``, and ``json`` and ``socket`` bring ``re``
and ``enum`` (together several times a ``curl``). ``tapgate hook claude-code
--print-command`` prints a command that runs *this file* as ``python -I
-S``: no ``site``, nothing from the environment, only built-in C modules
(``_json``, the accelerator ``json`` uses; ``_socket`` for one HTTP/1.1
exchange). It answers what is decided at once (a policy's or a grant's allow
or deny) with exactly the full hook's output.

Everything else is ``exec``'d as ``python -m tapgate hook claude-code`` with
the same flags and the hook input on stdin again: a request that waits for a
human (``--attach`` its id: never asked twice), a server that cannot be
reached (the full hook rides out a restart), an error status, ``https://``
or a proxy, an input or flag this file does not accept as it is. The full
hook stays the one definition of every other answer. Caveat: a server that
takes the call and never answers is asked again by the full hook (a pending
request it had recorded would be shown twice).

The full hook imports this module for the answer's shape, the flag values
and the reason line, so it imports only ``sys`` and ``os`` at module level.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

SCRIPT = os.path.abspath(__file__)
"""This file: what ``--print-command`` asks ``python -I -S`` to run."""

HOOK_EVENTS = ("PreToolUse", "PermissionRequest")
VERDICTS = ("allow", "deny")
DECISION_STATUSES = ("allowed", "denied", "approved", "expired", "cancelled")
DECISION_SOURCES = ("policy", "grant", "approver", "timeout", "cancel")
"""The wire's values, as ``core.models`` declares them (a test holds them equal)."""

DEFAULT_URL = "http://127.0.0.1:8080"
TOKEN_ENV = "TAPGATE_AGENT_TOKEN"  # noqa: S105 - the variable's name, not a token
CHOICES = {"--on-error": ("deny", "ask", "allow"), "--on-expired": ("deny", "ask")}
_FLAGS = ("--url", "--token-env", "--on-error", "--on-expired", "--timeout", "--retry-for")
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_TIMEOUT = 10.0
"""Seconds to connect and to read the answer (the full hook's), never more than ``--timeout``."""
_HOOK_TIMEOUT = "300"
"""``--timeout``'s default (``DEFAULT_HOOK_TIMEOUT``, held equal by a test)."""
_MAX_ANSWER = 1 << 20
_SPACE = " \t\n\r"
"""JSON's whitespace, as ``json.loads`` skips it around the document."""


def hook_output(
    event: str, verdict: str, reason: str, updated_input: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Claude Code's answer for ``verdict``; ``updated_input``: an approver's edit (allow only)."""
    if event == "PreToolUse":
        output: dict[str, Any] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": verdict,
            "permissionDecisionReason": reason,
        }
        if updated_input is not None and verdict == "allow":
            output["updatedInput"] = dict(updated_input)
        return {"hookSpecificOutput": output}
    if verdict == "ask":
        # No decision: Claude Code shows its own permission dialog; tell the user why.
        return {"systemMessage": reason}
    decision: dict[str, Any] = {"behavior": verdict}
    if verdict == "deny":
        decision["message"] = reason
    elif updated_input is not None:
        decision["updatedInput"] = dict(updated_input)
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def fallback(event: str, verdict: str, problem: str, flag: str) -> dict[str, Any]:
    """The answer a flag chose (``--on-error deny``...) for ``problem``, which the reason names."""
    done = {"deny": "denied", "allow": "allowed", "ask": "asking in Claude Code instead"}[verdict]
    return hook_output(event, verdict, f"tapgate: {problem}; {done} ({flag} {verdict})")


def reason_line(source: str, decided_by: str, reason: str, rule: str | None, allowed: bool) -> str:
    """One line on who or what decided: approvers' reasons name nobody, policy reasons no rule."""
    if source == "approver" and decided_by not in reason:
        verb = "approved" if allowed else "denied"
        return f"{verb} by {decided_by}: {reason}"
    if source == "policy" and rule and rule not in reason:
        return f"{reason} ({rule})"
    return reason


def seconds(text: str) -> float:
    """``--timeout``: a positive, finite number of seconds; ``ValueError`` says what is wrong."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a positive number of seconds: {text!r}")
    return value


def duration(text: str) -> float:
    """``--retry-for``: seconds in ``90``, ``90s``, ``2m`` or ``1h``; 0 is allowed."""
    import math

    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = (text[:-1], units[text[-1]]) if text[-1:] in units else (text, 1.0)
    try:
        value = float(number) * unit
    except ValueError:
        raise ValueError(f"not a duration (90, 90s, 2m, 1h): {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"must be a duration of 0 or more: {text!r}")
    return value


class HandOff(Exception):
    """Not for this file to answer: the full hook answers, attached to ``args[0]`` if given."""


def fast_answer(argv: Sequence[str], raw: bytes) -> str:
    """The hook's stdout for a call decided at once; ``HandOff`` for anything else."""
    flags = read_flags(argv)
    event, call = _hook_input(raw)
    token = os.environ.get(flags["--token-env"])
    if not token or "\r" in token or "\n" in token:
        raise HandOff
    host, port, prefix = _http_url(flags["--url"])
    where = (host, port, prefix + "/v1/tool-calls")
    limit = min(_TIMEOUT, seconds(flags["--timeout"]))
    status, body = _exchange(where, token, _dumps(call, compact=True), limit)
    if status == 201 and body.get("decision") == "pending" and isinstance(body.get("id"), str):
        raise HandOff(body["id"])
    if status != 200:
        raise HandOff
    return _dumps(_decided(event, body, flags["--on-expired"]), compact=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Answer one hook call from this file, or hand it to the full hook; exit 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        raw = sys.stdin.buffer.read()
    except (OSError, ValueError):
        raw = b""
    try:
        answer = fast_answer(argv, raw)
    except HandOff as handed:
        return _hand_off(argv, raw, handed.args[0] if handed.args else None)
    except Exception:  # any surprise is the full hook's to answer, never a crash here
        return _hand_off(argv, raw, None)
    sys.stdout.write(answer)
    sys.stdout.flush()
    return 0


def read_flags(argv: Sequence[str]) -> dict[str, str]:
    """The flags as the full hook's parser reads them (values checked the same way)."""
    found = {
        "--url": os.environ.get("TAPGATE_URL") or DEFAULT_URL,
        "--token-env": TOKEN_ENV,
        "--on-expired": "deny",
        "--timeout": _HOOK_TIMEOUT,
    }
    index = 0
    while index < len(argv):
        flag, equals, value = argv[index].partition("=")
        if flag not in _FLAGS:
            raise HandOff  # --help, a typo, --attach: the full parser answers
        if not equals:
            index += 1
            if index == len(argv) or argv[index].startswith("-"):
                raise HandOff
            value = argv[index]
        if flag in CHOICES and value not in CHOICES[flag]:
            raise HandOff
        if flag == "--timeout":
            seconds(value)
        elif flag == "--retry-for":
            duration(value)
        found[flag] = value
        index += 1
    return found


def _hook_input(raw: bytes) -> tuple[str, dict[str, Any]]:
    """The event and the call to send, from input exactly as the full hook accepts it."""
    body = _loads(raw.decode())
    if not isinstance(body, dict):
        raise HandOff
    event, tool, arguments = (
        body.get("hook_event_name"),
        body.get("tool_name"),
        body.get("tool_input", {}),
    )
    if event not in HOOK_EVENTS or not isinstance(tool, str) or not tool:
        raise HandOff
    if not isinstance(arguments, dict):
        raise HandOff
    call: dict[str, Any] = {"tool": tool, "arguments": arguments}
    session = body.get("session_id")
    if isinstance(session, str) and session:
        call["session"] = session
    return event, call


def _http_url(url: str) -> tuple[str, int, str]:
    """Host, port and path prefix of a plain ``http://`` URL; anything else is handed off."""
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES):
        raise HandOff  # the full hook honours proxies
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "http" or not url.isascii() or not url.isprintable():
        raise HandOff
    if any(mark in rest for mark in "?#[ \\"):
        raise HandOff
    authority, slash, path = rest.partition("/")
    host, colon, port = authority.rpartition("@")[2].partition(":")
    if not host or (colon and not (port.isdigit() and 0 < int(port) < 65536)):
        raise HandOff
    return host.lower(), int(port) if port else 80, (slash + path).rstrip("/")


def _exchange(
    where: tuple[str, int, str], token: str, body: str, timeout: float
) -> tuple[int, dict[str, Any]]:
    """POST ``body`` to ``(host, port, path)``: the status and the JSON object answered."""
    import _socket

    host, port, path = where
    payload = body.encode()
    authority = host if port == 80 else f"{host}:{port}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n"
        "User-Agent: tapgate-client\r\nAccept: */*\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    sock = _connect(_socket, host, port, timeout)
    try:
        sock.sendall(head.encode() + payload)
        chunks, size = [], 0
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > _MAX_ANSWER:
                raise HandOff
    finally:
        sock.close()
    return _response(b"".join(chunks))


def _connect(module: Any, host: str, port: int, timeout: float) -> Any:
    """A connected socket, each address tried in turn; none reachable is handed off."""
    for family, kind, proto, _, address in module.getaddrinfo(
        host.encode(), port, 0, module.SOCK_STREAM
    ):
        sock = module.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except OSError:
            sock.close()
            continue
        return sock
    raise HandOff


def _response(data: bytes) -> tuple[int, dict[str, Any]]:
    """Status and JSON object of a ``Connection: close`` response (``Content-Length`` or EOF)."""
    head, sep, content = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    status = rest[:3]
    if not sep or version != "HTTP/1.1" or not status.isdigit():
        raise HandOff
    length = len(content)  # without a Content-Length, the body ends with the connection
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "transfer-encoding":
            raise HandOff
        if name == "content-length":
            length = int(value.strip())
    if len(content) < length:
        raise HandOff
    body = _loads(content[:length].decode())
    if not isinstance(body, dict):
        raise HandOff
    return int(status), body


def _decided(event: str, body: dict[str, Any], on_expired: str) -> dict[str, Any]:
    """The answer to a decision the submit carried, as the full hook gives it."""
    verdict, status, source = body.get("decision"), body.get("status"), body.get("source")
    decided_by, reason, rule = body.get("decided_by"), body.get("reason"), body.get("rule")
    edited, arguments = body.get("edited") is True, body.get("arguments")
    if verdict not in VERDICTS or status not in DECISION_STATUSES or source not in DECISION_SOURCES:
        raise HandOff
    if not isinstance(decided_by, str) or not isinstance(reason, str):
        raise HandOff
    if edited and (not isinstance(arguments, dict) or verdict != "allow"):
        raise HandOff
    rule = rule if isinstance(rule, str) else None
    if status == "expired" and verdict != "allow":
        request_id = body.get("id")
        request_id = request_id if isinstance(request_id, str) else None
        problem = f"request {request_id} expired: {reason}"
        return fallback(event, on_expired, problem, "--on-expired")
    line = reason_line(source, decided_by, reason, rule, verdict == "allow")
    return hook_output(event, verdict, f"tapgate: {line}", arguments if edited else None)


def _loads(text: str) -> Any:
    """``json.loads(text)`` through the accelerator ``json`` itself uses, without ``re``."""
    import _json

    class Context:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float  # NaN, Infinity, -Infinity, as json.loads reads them

    context: Any = Context()
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        found, end = _json.make_scanner(context)(text, start)
    except (StopIteration, ValueError, RecursionError):
        raise HandOff from None
    if text[end:].strip(_SPACE):
        raise HandOff
    return found


def _dumps(value: Any, *, compact: bool) -> str:
    """``json.dumps(value)`` (``compact``: as the client sends, UTF-8, no NaN) without ``re``."""
    import _json

    def refuse(found: object) -> object:
        raise TypeError(f"not JSON: {type(found).__name__}")

    encode = _json.encode_basestring if compact else _json.encode_basestring_ascii
    key, item = (":", ",") if compact else (": ", ", ")
    encoder = _json.make_encoder({}, refuse, encode, None, key, item, False, False, not compact)
    return "".join(encoder(value, 0))


def _hand_off(argv: Sequence[str], raw: bytes, request_id: str | None) -> int:
    """``exec`` the full hook with the same flags and the hook input on its stdin again."""
    # -P: without it, -m puts the working directory (the project) first on sys.path.
    command = [sys.executable, "-P", "-m", "tapgate", "hook", "claude-code", *argv]
    if request_id is not None:
        command += ["--attach", request_id]
    try:
        _stdin_from(raw)
        os.execv(sys.executable, command)  # noqa: S606 - our own interpreter, our own module
    except OSError as exc:
        problem = f"could not start the full hook ({type(exc).__name__}: {exc})"
        event = "PreToolUse"
        try:
            found = _loads(raw.decode()).get("hook_event_name")
            event = found if found in HOOK_EVENTS else event
        except Exception:  # noqa: S110 - an unreadable input is answered as PreToolUse
            pass
        answer = hook_output(event, "deny", f"tapgate: {problem}; denied")
        sys.stdout.write(_dumps(answer, compact=False) + "\n")
        sys.stdout.flush()
    return 0


def _stdin_from(raw: bytes) -> None:
    """Make file descriptor 0 a file holding ``raw`` (in memory on Linux), read from its start."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("tapgate-hook-input")
    else:  # pragma: no cover - not Linux
        import tempfile

        fd, path = tempfile.mkstemp()
        os.unlink(path)
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)


if __name__ == "__main__":
    raise SystemExit(main())
