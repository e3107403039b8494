"""Every request gets an answer: bodies that never decode, never finish or are too large.

Through the real app on a real port, with raw bytes written by
``asyncio.open_connection``: the headers first, the body in a second write,
as the finding did (aiohttp's test client cannot split a request). The POST
routes are collected from the app's router, so a new route is covered
without a change here. ``server.body_timeout`` is small, so a truncated body
is answered in a fraction of a second; every answer is awaited with a bound
(:data:`BOUND`), so a hang fails the test instead of stalling it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tapgate.config import Config, parse_config
from tapgate.delivery.recording import RecordingNotifier
from tapgate.server.api.models import ErrorOut
from tapgate.server.app import build_app

CI = "ci-bot-token-0123456789abcdef"
BODY_TIMEOUT = 0.2
BOUND = 5.0
"""Seconds any answer may take here; 25 times ``BODY_TIMEOUT``, far below a client's patience."""

JSON_APIS = ("/v1/", "/humanlayer/v1/")
DOCUMENT = b'{"tool": "deploy", "arguments": {"env": "prod"}}'
DEFLATED = zlib.compress(DOCUMENT)


def make_config(db_url: str) -> Config:
    """Every POST route on: the agent API, HumanLayer's, and both webhooks over HTTP."""
    nowhere = "http://127.0.0.1:9/"  # never contacted: nothing here is verified or replied to
    return parse_config(
        {
            "server": {"heartbeat_interval": 3600, "body_timeout": BODY_TIMEOUT},
            "store": {"url": db_url},
            "agents": [{"name": "ci-bot", "token": CI}],
            "approvers": [{"name": "alice", "line": "U" + "a1" * 16, "slack": "U0ALICE"}],
            "channels": {
                "console": {"enabled": False},
                "line": {
                    "channel_access_token": "line-test-channel-access-token",
                    "channel_secret": "test-line-channel-secret",
                    "api_base_url": nowhere,
                },
                "slack": {
                    "bot_token": "xoxb-test",
                    "signing_secret": "test-slack-signing-secret-0123",
                    "api_base_url": nowhere,
                },
            },
            "policy": {"default_approvers": ["alice"]},
        },
        env={},
    )


def post_paths() -> list[str]:
    """A concrete path for each POST route the app registers (``{id}`` filled in)."""
    app = build_app(make_config("sqlite:///unused.db"))  # the store opens only on startup
    paths = {
        re.sub(r"\{[^}]+\}", "x", route.resource.canonical)
        for route in app.router.routes()
        if route.method == "POST" and route.resource is not None
    }
    return sorted(paths)


POST_PATHS = post_paths()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture
async def server(
    migrated_sqlite_url: str, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]
) -> TestServer:
    config = make_config(migrated_sqlite_url)
    return await aiohttp_server(build_app(config, notifiers=[RecordingNotifier("console")]))


def head(path: str, *lines: str) -> bytes:
    """A request's head with the agent's token (so the API routes get as far as the body)."""
    fields = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {CI}", *lines]
    return ("\r\n".join(fields) + "\r\n\r\n").encode()


async def exchange(server: TestServer, *writes: bytes) -> Answer:
    """Write ``writes`` one by one (a pause between them), then read the answer within BOUND."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        for i, chunk in enumerate(writes):
            if i:
                await asyncio.sleep(0.05)  # the body arrives after the server has read the head
            writer.write(chunk)
            await writer.drain()
        answer = await asyncio.wait_for(read_answer(reader), BOUND)
        writer.write_eof()
        # The connection closes after a refusal; wait for it, so that anything
        # the server logs while closing is logged before the test looks.
        await asyncio.wait_for(reader.read(), BOUND)
        return answer
    finally:
        writer.close()


async def read_answer(reader: asyncio.StreamReader) -> Answer:
    status_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if line)
    body = await reader.readexactly(int(headers["Content-Length"]))
    return Answer(status=int(status_line.split()[1]), headers=headers, body=body)


def assert_refusal(path: str, answer: Answer, status: int, code: str) -> None:
    """JSON in the route's own shape: the documented API error, or the webhooks' ``error``."""
    assert answer.status == status, answer
    assert answer.headers["Content-Type"].startswith("application/json"), answer
    if path.startswith(JSON_APIS):
        assert ErrorOut.model_validate_json(answer.body).error.code == code
    else:
        assert isinstance(answer.json()["error"], str), answer


# -- the finding: a deflate body in a second write ------------------------------------


@pytest.mark.parametrize("body", [DEFLATED, DEFLATED[:8]], ids=["deflate", "deflate-cut-short"])
@pytest.mark.parametrize("path", POST_PATHS)
async def test_a_deflate_body_sent_after_the_head_is_answered_on_every_post_route(
    server: TestServer, path: str, body: bytes
) -> None:
    """The cut-short stream is the one that hung: aiohttp's parser failed it with no one waiting."""
    answer = await exchange(
        server, head(path, "Content-Encoding: deflate", f"Content-Length: {len(body)}"), body
    )
    assert_refusal(path, answer, 415, "unsupported_encoding")


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd", "x-unknown", "deflate, identity"])
async def test_any_content_coding_is_415_in_one_write_too(
    server: TestServer, encoding: str
) -> None:
    path = "/v1/tool-calls"
    answer = await exchange(
        server,
        head(path, f"Content-Encoding: {encoding}", f"Content-Length: {len(DEFLATED)}") + DEFLATED,
    )
    assert_refusal(path, answer, 415, "unsupported_encoding")


async def test_an_identity_coding_is_read_as_usual(server: TestServer) -> None:
    answer = await exchange(
        server,
        head("/v1/tool-calls", "Content-Encoding: identity", f"Content-Length: {len(DOCUMENT)}"),
        DOCUMENT,
    )
    assert answer.status == 201 and answer.json()["decision"] == "pending"


# -- truncated, slow and oversized bodies ---------------------------------------------


@pytest.mark.parametrize("path", POST_PATHS)
async def test_a_body_shorter_than_its_length_is_408_on_every_post_route(
    server: TestServer, path: str
) -> None:
    answer = await exchange(server, head(path, "Content-Length: 100"), b'{"tool": "de')
    assert_refusal(path, answer, 408, "body_timeout")


async def test_a_chunked_body_that_stops_is_408(server: TestServer) -> None:
    path = "/webhooks/slack"
    answer = await exchange(server, head(path, "Transfer-Encoding: chunked"), b"5\r\nab")
    assert_refusal(path, answer, 408, "body_timeout")


async def test_broken_chunk_framing_after_the_head_is_answered(server: TestServer) -> None:
    """aiohttp's parser fails it where no handler hears: the body timeout answers it."""
    path = "/v1/tool-calls"
    answer = await exchange(server, head(path, "Transfer-Encoding: chunked"), b"zz\r\nab\r\n")
    assert_refusal(path, answer, 408, "body_timeout")


@pytest.mark.parametrize("path", POST_PATHS)
async def test_a_declared_oversized_body_is_a_json_413_before_it_is_read(
    server: TestServer, path: str
) -> None:
    answer = await exchange(server, head(path, "Content-Length: 2000000"), b"x" * 1000)
    assert_refusal(path, answer, 413, "payload_too_large")


@pytest.mark.parametrize("path", ["/v1/tool-calls", "/webhooks/line"])
async def test_a_chunked_oversized_body_is_a_json_413(server: TestServer, path: str) -> None:
    chunk = b"x" * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(17)) + b"0\r\n\r\n"
    answer = await exchange(server, head(path, "Transfer-Encoding: chunked"), chunks)
    assert_refusal(path, answer, 413, "payload_too_large")


# -- the log: one line per refusal, no traceback --------------------------------------

REFUSALS = {
    "deflate": (
        head("/webhooks/line", "Content-Encoding: deflate", "Content-Length: 8"),
        DEFLATED[:8],
    ),
    "truncated": (head("/v1/tool-calls", "Content-Length: 100"), b"{"),
    "oversized": (head("/humanlayer/v1/function_calls", "Content-Length: 2000000"), b"x"),
    "malformed-http": (b"POST /v1/tool-calls HTTP/1.1\r\nBad Header\r\n\r\n",),
}


@pytest.mark.parametrize("writes", REFUSALS.values(), ids=REFUSALS.keys())
async def test_each_refused_request_is_one_log_line_without_a_traceback(
    server: TestServer, writes: tuple[bytes, ...], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    answer = await exchange(server, *writes)
    assert 400 <= answer.status < 500
    noted = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(noted) == 1, [r.getMessage() for r in noted]
    assert all(r.exc_info is None for r in caplog.records)
    assert "Traceback" not in caplog.text
