"""``tapgate mcp-proxy`` against an upstream that misbehaves: every call still gets an answer.

The upstream is ``mcp_hostile.py`` (the SDK's low-level ``Server``, made to
misbehave one way per mode), spawned by the proxy as in ``test_mcp_proxy``;
the tapgate server is the real one. Each test bounds the call it makes, so a
gateway that hangs fails the test instead of stalling the suite.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import types
from mcp.client.session import ClientSession

from tests.client.test_hook_claude_code import Served, serve
from tests.client.test_mcp_proxy import POLICY, proxied, text

HOSTILE = Path(__file__).with_name("mcp_hostile.py")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serve(tmp_path, policy=POLICY) as s:
        yield s


def hostile(mode: str) -> list[str]:
    return ["--", sys.executable, str(HOSTILE), mode]


async def call_unlisted(session: ClientSession, tool: str, bound: float) -> types.CallToolResult:
    """``tools/call`` as sent, without the SDK client's own ``tools/list`` before it."""
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments={}))
    return await asyncio.wait_for(session.send_request(request, types.CallToolResult), bound)


@pytest.mark.parametrize("mode", ["repeat", "endless", "hang-list"])
async def test_a_trusted_listing_that_never_ends_does_not_hang_a_call(
    served: Served, mode: str
) -> None:
    """Annotations are looked up by listing the tools; a listing that never ends gives up."""
    async with proxied(served.url, "--trust-annotations", upstream=hostile(mode)) as session:
        result = await call_unlisted(session, "read_note", 30)  # the gateway gives up at 10s
    assert not result.is_error and text(result) == "ran"
