"""An MCP server that misbehaves on purpose, for the gateway's failure tests.

Built on the SDK's low-level ``Server`` (``MCPServer`` would not let a
listing misbehave) and run as a stdio script: ``mcp_hostile.py MODE``.
Its one tool is ``read_note``, which the tests' policy allows, so whatever
the gateway does wrong shows as a call that hangs rather than one that asks.

Modes: ``repeat`` lists the tool with a ``nextCursor`` that always comes back
the same, ``endless`` with a new cursor on every page, ``hang-list`` never
answers ``tools/list``; ``silent`` reads every message and answers none, not
even ``initialize``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MODE = sys.argv[1] if len(sys.argv) > 1 else "repeat"
TOOL = types.Tool(
    name="read_note",
    input_schema={"type": "object"},
    annotations=types.ToolAnnotations(read_only_hint=True),
)


Paged = types.PaginatedRequestParams | None


async def list_tools(ctx: Any, params: Paged) -> types.ListToolsResult:
    """The tool on every page, followed by a cursor that never ends the listing."""
    if MODE == "hang-list":
        await anyio.sleep_forever()
    page = int(params.cursor) if params and params.cursor and params.cursor.isdigit() else 0
    cursor = str(page + 1) if MODE == "endless" else "again"
    return types.ListToolsResult(tools=[TOOL], next_cursor=cursor)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """Every call runs, and names what it got beside its name and arguments.

    The SDK's own ``_meta`` entries (``io.modelcontextprotocol/...``) are left out.
    """
    extras = sorted(params.model_dump(exclude={"name", "arguments", "meta"}, exclude_none=True))
    extras += [f"_meta.{key}" for key in params.meta or {} if not key.startswith("io.model")]
    said = f"ran with {extras}" if extras else "ran"
    return types.CallToolResult(content=[types.TextContent(type="text", text=said)])


async def main() -> None:
    """Serve stdio; ``silent`` swallows stdin instead of speaking MCP."""
    if MODE == "silent":
        for _ in sys.stdin:
            pass
        await anyio.sleep_forever()
    server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
