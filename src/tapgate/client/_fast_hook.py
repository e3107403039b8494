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
human, an error status, a server that fails while answering, a server that
cannot be reached (the full hook rides out a restart), ``https://`` or a
proxy, an input or flag this file does not accept as it is. Once this file
has sent the call, the full hook gets what came back (``--submitted``) and
reads it as its own submit's answer: it never asks again where it would not
have asked again itself. The full hook stays the one definition of every
other answer.

The answer's shape, the reason line and the flags' values are
:mod:`._hook_answer`'s, shared with the full hook; run as a file, this
finds it beside itself, and imports nothing else but built-in modules.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

SCRIPT = os.path.abspath(__file__)
"""This file: what ``--print-command`` asks ``python -I -S`` to run."""


if TYPE_CHECKING or __package__:  # imported as tapgate.client._fast_hook
    from tapgate.client import _hook_answer as answers
else:  # run as a file (python -I -S): its own directory serves this one import
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import _hook_answer as answers

    del sys.path[0]
HOOK_EVENTS, DEFAULT_URL = answers.HOOK_EVENTS, answers.DEFAULT_URL
seconds, duration, hook_output = answers.seconds, answers.duration, answers.hook_output
_FLAGS = ("--url", "--token-env", "--on-error", "--on-expired", "--timeout", "--retry-for")
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_TIMEOUT = 10.0
"""Seconds to connect and to read the answer (the full hook's), never more than ``--timeout``."""
_HOOK_TIMEOUT = "300"
"""``--timeout``'s default (``DEFAULT_HOOK_TIMEOUT``, held equal by a test)."""
_MAX_ANSWER = 1 << 20
_SPACE = " \t\n\r"
"""JSON's whitespace, as ``json.loads`` skips it around the document."""


class HandOff(Exception):
    """Not for this file to answer: the full hook answers (``args[0]``: ``--submitted``'s value)."""


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
    received, failure = _exchange(where, token, _dumps(call, compact=True), limit)
    try:  # sent: whatever is not answered here, the full hook reads as its own submit's answer
        status, body = _response(received) if failure is None else (0, {})
        if status == 200:
            return _dumps(_decided(event, body, flags["--on-expired"]), compact=False) + "\n"
    except Exception:  # noqa: S110 - an answer this file cannot read is the full hook's to read
        pass
    raise HandOff(answers.encode_submitted(received, failure))


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
        "--token-env": answers.TOKEN_ENV,
        "--on-expired": "deny",
        "--timeout": _HOOK_TIMEOUT,
    }
    index = 0
    while index < len(argv):
        flag, equals, value = argv[index].partition("=")
        if flag not in _FLAGS:
            raise HandOff  # --help, a typo, --submitted: the full parser answers
        if not equals:
            index += 1
            if index == len(argv) or argv[index].startswith("-"):
                raise HandOff
            value = argv[index]
        if flag in answers.CHOICES and value not in answers.CHOICES[flag]:
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
) -> tuple[bytes, tuple[str, str] | None]:
    """POST ``body`` to ``(host, port, path)``: the bytes answered, and how reading them failed.

    A failure to connect is a plain ``HandOff`` (nothing was sent: the full
    hook asks itself); once sent, a failure is named as the full hook's
    transport names it, and never leads to asking again.
    """
    import _socket

    host, port, path = where
    payload = body.encode()
    authority = host if port == 80 else f"{host}:{port}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n"
        "User-Agent: tapgate-client\r\nAccept: */*\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    sock = _connect(_socket, host, port, timeout)
    chunks: list[bytes] = []
    failure, size, stage = None, 0, "Write"
    try:
        sock.sendall(head + payload)
        stage = "Read"
        while size <= _MAX_ANSWER and (chunk := sock.recv(65536)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:  # TimeoutError included
        kind = "Timeout" if isinstance(exc, TimeoutError) else "Error"
        failure = (stage + kind, str(exc))
    finally:
        sock.close()
    return b"".join(chunks), failure


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
    if verdict not in answers.VERDICTS or status not in answers.DECISION_STATUSES:
        raise HandOff
    if source not in answers.DECISION_SOURCES:
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
        return answers.fallback(event, on_expired, problem, "--on-expired")
    line = answers.reason_line(source, decided_by, reason, rule, verdict == "allow")
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


def _hand_off(
    argv: Sequence[str], raw: bytes, submitted: str | None, hook: str = "claude-code"
) -> int:
    """``exec`` the full hook (``tapgate hook HOOK``), same flags, the hook input on stdin again."""
    # -P: without it, -m puts the working directory (the project) first on sys.path.
    command = [sys.executable, "-P", "-m", "tapgate", "hook", hook, *argv]
    if submitted is not None:
        command += ["--submitted", submitted]
    try:
        _stdin_from(raw)
        os.execv(sys.executable, command)  # noqa: S606 - our own interpreter, our own module
    except OSError as exc:
        problem = f"could not start the full hook ({type(exc).__name__}: {exc})"
        event = "PermissionRequest" if hook == "codex" else "PreToolUse"
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
