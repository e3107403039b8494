"""The MCP gateway refuses a tool its upstream does not list, at once, and pages nobody.

Real parts as in ``test_mcp_proxy``: the SDK's client over stdio, the
installed ``tapgate mcp-proxy``, the SDK's ``MCPServer`` upstream and the
real tapgate server. Before, ``no_such_tool`` was put to an approver and the
client waited out the request's whole timeout for a call that could not run.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from tests.client.test_hook_claude_code import Served, serve
from tests.client.test_mcp_failures import call_unlisted, hostile
from tests.client.test_mcp_proxy import POLICY, call, proxied, text


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with serve(migrated_sqlite_url, policy=POLICY) as s:
        yield s


@pytest.mark.parametrize("flags", [(), ("--trust-annotations",)])
async def test_a_tool_the_upstream_does_not_list_is_refused_at_once(
    served: Served, flags: tuple[str, ...]
) -> None:
    async with proxied(served.url, *flags) as session:
        started = time.monotonic()
        result = await call_unlisted(session, "no_such_tool", 30)
        took = time.monotonic() - started
        after = await call(session, "read_note", name="groceries")  # the gateway still works
    assert result.is_error
    said = text(result)
    assert said.startswith(
        "tapgate: the MCP server 'notes' has no tool 'no_such_tool' (its tools: "
    )
    assert "summarise" not in said  # its tools, not its prompts
    for tool in ("crash", "delete_note", "peek", "read_note", "wipe", "write_note"):
        assert tool in said
    assert said.endswith("the tool was not called and nobody was asked")
    assert await served.requests() == []  # no approver paged
    assert took < 10  # not a request's timeout (10 minutes here)
    assert not after.is_error


async def test_a_listing_that_proves_nothing_leaves_the_call_to_the_policy(
    served: Served,
) -> None:
    """An upstream whose listing never answers cannot show a tool is missing: tapgate decides."""
    flags = ("--listing-timeout", "1s")
    async with proxied(served.url, *flags, upstream=hostile("hang-list")) as session:
        first = await call_unlisted(session, "read_note", 30)
        started = time.monotonic()
        second = await call_unlisted(session, "read_note", 30)
        again = time.monotonic() - started
    assert not first.is_error and text(first) == "ran"
    assert not second.is_error and again < 1  # the broken listing is not waited for again
