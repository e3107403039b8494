"""One HTTP/1.1 exchange on a socket of its own: the hook's transport, without ``http.client``.

``http.client`` imports ``email.parser`` (for its headers), ``ssl`` and
``socket``'s IDNA codec on every start: ~15 ms of a hook that runs on every
Claude Code tool call, for a request whose answer is a small JSON. A
:class:`~tapgate.client._lean.LeanGate` request needs much less of HTTP/1.1:
it sends ``Connection: close`` and reads one response, its body delimited by
``Content-Length``, by chunks, or by the end of the connection. Written here
from RFC 9112 with ``http.client``'s limits (a status or header line of at
most 64 KiB, at most 100 headers) so that a hostile or broken server gets a
``RemoteProtocolError``, never a hang past the read timeout or unbounded memory
in one line. ``ssl`` is imported only for an ``https://`` server (the system
trust store, host names verified).

Failures are :class:`~tapgate.client._plans.TransportFailure` under httpx's
names, with ``never_sent`` true only when the connection (TLS included)
could not be opened, exactly as before.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import BinaryIO

from tapgate.client._plans import TransportFailure

__all__ = ["Response", "exchange", "replayed"]

_MAX_LINE = 65536
_MAX_HEADERS = 100
_MAX_BODY = 16 * 1024 * 1024
"""tapgate's answers are small JSON; a body larger than this is a broken or hostile server."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Response:
    """A response read to its end: status, reason, headers in order, body."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    content: bytes


_Request = tuple[str, str, Mapping[str, str], bytes | None]
"""Method, target (path and query), headers, body."""


class _Broken(Exception):
    """The server's bytes are not an HTTP/1.1 response (a ``RemoteProtocolError``)."""


def exchange(
    scheme: str,
    host: str,
    port: int | None,
    request: _Request,
    *,
    timeout: float,
    read_timeout: float | None,
) -> Response:
    """Send ``(method, target, headers, body)`` to ``scheme://host:port``; read the response.

    ``timeout`` bounds the connect and the write, ``read_timeout`` (``None``:
    none) each read of the response, as the plans' long-polls need.
    """
    wire = _request_bytes(scheme, host, port, request)  # a bad header fails before connecting
    sock = _connect(scheme, host, port or _DEFAULT_PORTS[scheme], timeout)
    try:
        try:
            sock.sendall(wire)
        except TimeoutError as exc:
            raise TransportFailure("WriteTimeout", str(exc), never_sent=False) from exc
        except OSError as exc:
            raise TransportFailure("WriteError", str(exc), never_sent=False) from exc
        sock.settimeout(read_timeout)
        try:
            with sock.makefile("rb") as stream:
                return _read_response(stream)
        except TimeoutError as exc:
            raise TransportFailure("ReadTimeout", str(exc), never_sent=False) from exc
        except _Broken as exc:
            raise TransportFailure("RemoteProtocolError", str(exc), never_sent=False) from exc
        except OSError as exc:
            raise TransportFailure("ReadError", str(exc), never_sent=False) from exc
    finally:
        sock.close()


def replayed(received: bytes, failure: tuple[str, str] | None) -> Response:
    """The answer the hook's fast path got for this very request, read as :func:`exchange` would.

    The fast path sent the submit once; a hand-off must not send it again
    where :func:`exchange` could not have (its failures after sending have
    ``never_sent`` false, so the plans do not resend a submit).
    """
    import io

    if failure is not None:
        raise TransportFailure(failure[0], failure[1], never_sent=False)
    try:
        return _read_response(io.BytesIO(received))
    except _Broken as exc:
        raise TransportFailure("RemoteProtocolError", str(exc), never_sent=False) from exc


def _connect(scheme: str, host: str, port: int, timeout: float) -> socket.socket:
    """The connection, TLS included for ``https``; a failure here means nothing was sent."""
    # An ASCII host name as bytes: socket would otherwise load the IDNA codec to encode it.
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    try:
        sock = socket.create_connection((name, port), timeout=timeout)  # type: ignore[arg-type]
    except TimeoutError as exc:
        raise TransportFailure("ConnectTimeout", str(exc), never_sent=True) from exc
    except OSError as exc:
        raise TransportFailure("ConnectError", str(exc), never_sent=True) from exc
    if scheme != "https":
        return sock
    import ssl  # the trust store is loaded only for an https:// server

    try:
        return ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    except TimeoutError as exc:
        sock.close()
        raise TransportFailure("ConnectTimeout", str(exc), never_sent=True) from exc
    except OSError as exc:  # ssl.SSLError included: a certificate that does not verify
        sock.close()
        raise TransportFailure("ConnectError", str(exc), never_sent=True) from exc


def _request_bytes(scheme: str, host: str, port: int | None, request: _Request) -> bytes:
    """The request head and body; ``Host`` as ``http.client`` writes it (IDNA, no default port)."""
    method, target, headers, body = request
    authority = host if host.isascii() else host.encode("idna").decode("ascii")
    if ":" in authority:
        authority = f"[{authority}]"  # an IPv6 literal
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        authority += f":{port}"
    lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}"]
    for name, value in headers.items():
        if "\r" in value or "\n" in value:  # a token from the environment must not add headers
            raise ValueError(f"Invalid header value for {name}")
        lines.append(f"{name}: {value}")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    lines += ["Accept-Encoding: identity", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + (body or b"")


def _read_response(stream: BinaryIO) -> Response:
    while True:  # interim 1xx responses (100 Continue) are skipped, as http.client does
        status, reason = _status_line(_line(stream))
        headers = _headers(stream)
        if not 100 <= status < 200:
            break
    fields = {name.lower(): value for name, value in headers}
    if "chunked" in fields.get("transfer-encoding", "").lower():
        content = _chunked(stream)
    elif "content-length" in fields:
        content = _exactly(stream, _length(fields["content-length"]))
    else:  # delimited by the end of the connection
        content = stream.read(_MAX_BODY + 1)
        if len(content) > _MAX_BODY:
            raise _Broken("a body larger than 16 MiB")
    return Response(status=status, reason=reason, headers=headers, content=content)


def _line(stream: BinaryIO) -> bytes:
    line = stream.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _Broken("a line longer than 64 KiB")
    if not line:
        raise _Broken("Server disconnected without sending a response.")
    return line


def _status_line(line: bytes) -> tuple[int, str]:
    version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise _Broken(f"not an HTTP/1.1 status line: {line[:80]!r}")
    return int(code), reason


def _headers(stream: BinaryIO) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    while (line := _line(stream)) not in (b"\r\n", b"\n"):
        if len(headers) >= _MAX_HEADERS:
            raise _Broken(f"more than {_MAX_HEADERS} headers")
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name or name != name.strip():
            raise _Broken(f"a malformed header line: {line[:80]!r}")
        headers.append((name, value.strip()))
    return headers


def _length(value: str) -> int:
    if not (value.strip().isascii() and value.strip().isdigit()):
        raise _Broken(f"a malformed Content-Length: {value[:40]!r}")
    if int(value) > _MAX_BODY:
        raise _Broken("a body larger than 16 MiB")
    return int(value)


def _exactly(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise _Broken(f"the body ended after {len(data)} of {size} bytes")
    return data


def _chunked(stream: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size_text = _line(stream).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _Broken(f"a malformed chunk size: {size_text[:40]!r}") from None
        if size < 0 or size + sum(map(len, parts)) > _MAX_BODY:
            raise _Broken("a negative chunk size, or a body larger than 16 MiB")
        if size == 0:
            while _line(stream) not in (b"\r\n", b"\n"):  # trailers, ignored
                pass
            return b"".join(parts)
        parts.append(_exactly(stream, size))
        _line(stream)  # the CRLF after the chunk
