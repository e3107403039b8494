"""A real MCP server for the gateway's tests, built with the SDK's ``MCPServer`` (FastMCP).

Run as a script it serves stdio; with ``--http PORT`` it serves streamable
HTTP on that loopback port. Its tools cover what the proxy must tell apart:
plain reads and writes, annotated ones, a tool that kills the server mid-call
and one that reports whether a variable reached its environment.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes", instructions="Notes kept for the gateway tests.", version="1.2.3")


@server.tool()
def read_note(name: str) -> str:
    """Read a note."""
    return f"note {name}: buy milk"


@server.tool()
def write_note(name: str, text: str) -> str:
    """Write a note."""
    return f"wrote {len(text)} characters to {name}"


@server.tool()
def delete_note(name: str) -> str:
    """Delete a note."""
    return f"deleted {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek(name: str) -> str:
    """Look at a note without changing anything (annotated read-only)."""
    return f"peeked at {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def wipe() -> str:
    """Delete every note (annotated destructive)."""
    return "wiped"


@server.tool()
def crash() -> str:
    """Die in the middle of the call, as a server that crashes does."""
    os._exit(3)


@server.tool()
def environment(name: str) -> str:
    """Whether the variable ``name`` reached this server's environment."""
    return "set" if name in os.environ else "unset"


@server.resource("notes://index", mime_type="text/plain")
def index() -> str:
    """The list of notes."""
    return "groceries\nchores"


@server.resource("notes://{name}")
def note(name: str) -> str:
    """One note by name."""
    return f"note {name}"


@server.prompt()
def summarise(topic: str) -> str:
    """Ask for a summary of the notes on a topic."""
    return f"Summarise my notes about {topic}."


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
