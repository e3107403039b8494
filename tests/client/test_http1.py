"""The hook's own HTTP/1.1 exchange against real sockets that answer well, oddly and badly.

Each case is a one-shot TCP server on a loopback port that reads the request
and writes bytes as given: a real peer, not a mock, so framing, timeouts and
the connection's end are the kernel's. (The exchange against tapgate's real
server is exercised by the hook's own tests.)
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tapgate.client._http1 import Response, exchange
from tapgate.client._plans import TransportFailure

POST = ("POST", "/v1/tool-calls?wait=1", {"Authorization": "Bearer t"}, b'{"a":1}')


class OneShot:
    """Accepts one connection, records the request's bytes, answers ``reply`` and closes."""

    def __init__(self, reply: bytes, *, stall: bool = False) -> None:
        self.reply = reply
        self.stall = stall
        self.request = b""
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(5)
            while b"\r\n\r\n" not in self.request:
                self.request += conn.recv(65536)
            head, _, body = self.request.partition(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n")
                 if line.lower().startswith(b"content-length:")),
                0,
            )  # fmt: skip
            while len(body) < length:
                body += conn.recv(65536)
            self.request = head + b"\r\n\r\n" + body
            conn.sendall(self.reply)
            if self.stall:
                self.done.wait(5)

    def close(self) -> None:
        self.done.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[list[OneShot]]:
    servers: list[OneShot] = []
    yield servers
    for server in servers:
        server.close()


def ask(servers: list[OneShot], reply: bytes, *, stall: bool = False, read: float = 5) -> Response:
    server = OneShot(reply, stall=stall)
    servers.append(server)
    return exchange("http", "127.0.0.1", server.port, POST, timeout=5, read_timeout=read)


def test_a_response_with_a_length_and_the_request_as_sent(serve: list[OneShot]) -> None:
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    response = ask(serve, reply)
    assert response == Response(
        status=200,
        reason="OK",
        headers=[("Content-Type", "application/json"), ("Content-Length", "2")],
        content=b"{}",
    )
    head, _, body = serve[0].request.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/tool-calls?wait=1 HTTP/1.1"
    port = serve[0].port
    assert f"Host: 127.0.0.1:{port}".encode() in lines
    assert {b"Authorization: Bearer t", b"Content-Length: 7", b"Connection: close"} <= set(lines)
    assert body == b'{"a":1}'


@pytest.mark.parametrize(
    ("reply", "content"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n3;x=y\r\nabc\r\n0\r\n"
         b"Trailer: t\r\n\r\n", b"{}abc"),
        (b"HTTP/1.1 200 OK\r\n\r\nuntil the end", b"until the end"),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", b""),
    ],
)  # fmt: skip
def test_chunked_until_close_and_interim_responses(
    serve: list[OneShot], reply: bytes, content: bytes
) -> None:
    assert ask(serve, reply).content == content


@pytest.mark.parametrize(
    "reply",
    [
        b"",  # closed without a word
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 101 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n",
    ],
)
def test_a_broken_response_is_a_remote_protocol_error(serve: list[OneShot], reply: bytes) -> None:
    with pytest.raises(TransportFailure) as failure:
        ask(serve, reply)
    assert failure.value.kind == "RemoteProtocolError"
    assert not failure.value.never_sent


def test_a_server_that_stops_talking_is_a_read_timeout(serve: list[OneShot]) -> None:
    with pytest.raises(TransportFailure) as failure:
        ask(serve, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", stall=True, read=0.3)
    assert failure.value.kind == "ReadTimeout"


def test_nothing_listening_is_a_connect_error_never_sent() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(TransportFailure) as failure:
        exchange("http", "127.0.0.1", port, POST, timeout=2, read_timeout=2)
    assert (failure.value.kind, failure.value.never_sent) == ("ConnectError", True)


def test_a_header_value_cannot_add_headers() -> None:
    with pytest.raises(ValueError, match="Invalid header value"):
        exchange(
            "http",
            "127.0.0.1",
            9,
            ("GET", "/", {"Authorization": "Bearer t\r\nX-Evil: 1"}, None),
            timeout=1,
            read_timeout=1,
        )


# -- https: the system's trust store, host names verified ---------------------------------


def tls_server(certificate: tuple[str, str]) -> tuple[socket.socket, threading.Thread]:
    """Answers one TLS connection with a small 200 (a failed handshake just ends it)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                tls.settimeout(5)
                while b"\r\n\r\n" not in tls.recv(65536):
                    pass
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def test_https_verifies_the_certificate_and_the_host_name(
    certificate: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    get: tuple[str, str, dict[str, str], None] = ("GET", "/", {}, None)
    listener, thread = tls_server(certificate)
    port = listener.getsockname()[1]
    with pytest.raises(TransportFailure) as untrusted:  # self-signed, not in the trust store
        exchange("https", "localhost", port, get, timeout=5, read_timeout=5)
    assert (untrusted.value.kind, untrusted.value.never_sent) == ("ConnectError", True)
    thread.join(5)
    listener.close()

    monkeypatch.setenv("SSL_CERT_FILE", certificate[0])  # now the trust store holds it
    listener, thread = tls_server(certificate)
    port = listener.getsockname()[1]
    assert exchange("https", "localhost", port, get, timeout=5, read_timeout=5).content == b"ok"
    thread.join(5)
    listener.close()

    listener, thread = tls_server(certificate)  # trusted, but not the name asked for
    port = listener.getsockname()[1]
    with pytest.raises(TransportFailure) as wrong_name:
        exchange("https", "127.0.0.1", port, get, timeout=5, read_timeout=5)
    assert wrong_name.value.kind == "ConnectError"
    thread.join(5)
    listener.close()
