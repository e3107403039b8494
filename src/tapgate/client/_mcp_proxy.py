"""The MCP gateway: serve an upstream MCP server's tools to an MCP client, each call gated.

``tapgate mcp-proxy`` is an MCP server on stdio (what Claude Code, Claude
Desktop and any ``mcpServers`` config launch) whose other side is an MCP
*client* of the real server: a command it spawns (stdio) or a URL
(streamable HTTP). Both sides use the official ``mcp`` SDK (2.x): the
low-level ``Server`` downstream, because it hands results over as they are,
and ``ClientSession`` upstream.

What passes through unchanged: the server's identity and instructions, the
capabilities it offered for tools, resources, prompts and completions, every
listing page (cursors included) and every read, prompt and completion result,
upstream protocol errors with their codes. What does not: a ``tools/call``
runs upstream only after tapgate allowed it (:mod:`tapgate.client._mcp_gate`),
and anything else becomes a tool result with ``isError`` (a deny, an expiry,
tapgate unreachable, the upstream failing or gone). Server-initiated requests
(sampling, elicitation), notifications and resource subscriptions are not
forwarded.

This module imports the SDK at the top: it is loaded only by the command,
so ``tapgate`` without the ``mcp`` extra still starts.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from tapgate.client._mcp_gate import annotation_risk, gated_name, refusal, unlisted
from tapgate.client._remote import RemoteGate
from tapgate.client._retrying import DEFAULT_RETRY_FOR
from tapgate.gate.models import Risk, ToolCall

__all__ = ["LISTING_TIMEOUT", "McpProxyOptions", "serve_mcp_proxy"]

LISTING_TIMEOUT = 10.0
"""Seconds a call may spend listing a trusted upstream's tools for its annotations.

Past it the call goes on without them (the policy's default risk), so an
upstream that never answers ``tools/list`` or never ends its pages costs a
call this long instead of hanging it.
"""

Context = ServerRequestContext[Any, Any]
Paged = types.PaginatedRequestParams | None


@dataclass(frozen=True, kw_only=True, slots=True)
class McpProxyOptions:
    """What ``tapgate mcp-proxy`` was told: the upstream, the gate, and how far to trust it.

    Exactly one of ``command`` (argv of a stdio server) and ``url`` (a
    streamable-HTTP endpoint) names the upstream. ``token_env`` is the
    variable holding the agent token: it is removed from the environment a
    stdio upstream inherits, since a third-party server has no business
    holding the agent's tapgate credentials. ``retry_for`` is how long a
    gated call keeps waiting through a tapgate server that fails or restarts
    (see :class:`~tapgate.client.RemoteGate`) before its error result.
    """

    name: str
    command: Sequence[str] = ()
    url: str | None = None
    tapgate_url: str
    token: str
    token_env: str
    session: str | None = None
    trust_annotations: bool = False
    retry_for: float = DEFAULT_RETRY_FOR
    listing_timeout: float = LISTING_TIMEOUT
    """Seconds a call may spend listing a trusted upstream's tools (``--listing-timeout``)."""


class _Proxy:
    """The downstream handlers: forward to ``upstream``, but gate ``tools/call`` first."""

    def __init__(self, upstream: ClientSession, gate: RemoteGate, options: McpProxyOptions) -> None:
        self._upstream = upstream
        self._gate = gate
        self._options = options
        self._risks: dict[str, Risk | None] = {}
        """Every tool name the upstream listed, with the risk its annotations declare."""
        self._listing_broken = False
        """A listing failed or did not end: unknown names are left to tapgate from then on."""
        self._gone = False
        """A stdio upstream's connection closed: the process is dead, so no later call can run.

        Not set for a streamable-HTTP upstream, where the same error can end one
        call's response stream (a proxy cutting it) while the server lives on.
        """

    def server(self) -> Server[Any]:
        """A low-level server offering what the upstream offered, and nothing more."""
        offered = self._upstream.server_capabilities or types.ServerCapabilities()
        info = self._upstream.server_info
        handlers: dict[str, Any] = {}
        if offered.tools is not None:
            handlers |= {"on_list_tools": self.list_tools, "on_call_tool": self.call_tool}
        if offered.resources is not None:
            handlers |= {
                "on_list_resources": self.list_resources,
                "on_list_resource_templates": self.list_resource_templates,
                "on_read_resource": self.read_resource,
            }
        if offered.prompts is not None:
            handlers |= {"on_list_prompts": self.list_prompts, "on_get_prompt": self.get_prompt}
        if offered.completions is not None:
            handlers["on_completion"] = self.complete
        return Server(
            info.name if info is not None else self._options.name,
            version=info.version if info is not None else "",
            title=info.title if info is not None else None,
            instructions=self._upstream.instructions,
            **handlers,
        )

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Ask tapgate; run the call upstream only when allowed; every failure is ``isError``.

        Once the upstream is gone a call is refused before tapgate is asked:
        an approver would otherwise decide a call that cannot run.
        """
        if self._gone:
            return _error(f"tapgate: the MCP server {self._options.name!r} {_GONE}; {_NOT_CALLED}")
        if not await self._listed(params.name):
            return _error(unlisted(self._options.name, params.name, self._risks))
        call = ToolCall(
            tool=gated_name(self._options.name, params.name),
            arguments=params.arguments or {},
            session=self._options.session,
            risk=self._risks.get(params.name) if self._options.trust_annotations else None,
        )
        allowed = await refusal(self._gate, call)
        if isinstance(allowed, str):
            return _error(allowed)
        # Only what the approver saw goes upstream: the name and the arguments (as
        # edited, if they were). Input responses, a request state, a task or _meta
        # from the client could change what the call does without being on the card.
        arguments = params.arguments if allowed is call.arguments else dict(allowed)
        approved = types.CallToolRequestParams(name=params.name, arguments=arguments)
        try:
            return await self._upstream.send_request(
                types.CallToolRequest(params=approved), types.CallToolResult
            )
        except MCPError as exc:
            problem = f"failed the call ({exc.message})"
            if exc.code == types.CONNECTION_CLOSED:
                problem, self._gone = _GONE, self._options.url is None
        except Exception as exc:  # an unreadable answer is still an answer for the model
            problem = f"answered unreadably ({type(exc).__name__}: {exc})"
        return _error(f"tapgate: approved, but the MCP server {self._options.name!r} {problem}")

    async def list_tools(self, ctx: Context, params: Paged) -> types.ListToolsResult:
        return await self._tools_page(params)

    async def list_resources(self, ctx: Context, params: Paged) -> types.ListResourcesResult:
        return await self._upstream.send_request(
            types.ListResourcesRequest(params=params), types.ListResourcesResult
        )

    async def list_resource_templates(
        self, ctx: Context, params: Paged
    ) -> types.ListResourceTemplatesResult:
        return await self._upstream.send_request(
            types.ListResourceTemplatesRequest(params=params), types.ListResourceTemplatesResult
        )

    async def read_resource(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await self._upstream.send_request(
            types.ReadResourceRequest(params=params), types.ReadResourceResult
        )

    async def list_prompts(self, ctx: Context, params: Paged) -> types.ListPromptsResult:
        return await self._upstream.send_request(
            types.ListPromptsRequest(params=params), types.ListPromptsResult
        )

    async def get_prompt(
        self, ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await self._upstream.send_request(
            types.GetPromptRequest(params=params), types.GetPromptResult
        )

    async def complete(
        self, ctx: Context, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return await self._upstream.send_request(
            types.CompleteRequest(params=params), types.CompleteResult
        )

    async def _listed(self, tool: str) -> bool:
        """False only when the upstream's whole listing was read and ``tool`` is not in it.

        A client may call a tool it never listed: the listing is read (once per
        unknown name, so a tool added since is found) for its annotations and to
        refuse a tool the upstream does not have before anybody is paged for it.
        A listing that fails, never ends or takes longer than ``listing_timeout``
        proves nothing: the call goes on to tapgate (with no annotations), and
        later calls do not wait for that listing again.
        """
        if tool in self._risks:
            return True
        if self._listing_broken:
            return True
        complete = False
        with anyio.move_on_after(self._options.listing_timeout):
            complete = await self._list_tools_until(tool)
        if tool in self._risks:
            return True
        self._listing_broken = not complete
        return not complete

    async def _list_tools_until(self, tool: str) -> bool:
        """Page through the upstream's tools until ``tool`` is seen; True when the listing ended.

        A cursor seen before ends it too, as incomplete: an upstream that hands
        back the same cursor would otherwise be asked for the same page forever.
        """
        cursor: str | None = None
        seen: set[str] = set()
        while tool not in self._risks:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await self._tools_page(params)
            except Exception:  # no listing to be had: the policy decides, as without one
                return False
            cursor = page.next_cursor
            if not cursor:
                return True
            if cursor in seen:
                return False
            seen.add(cursor)
        return True

    async def _tools_page(self, params: Paged) -> types.ListToolsResult:
        """One page of the upstream's tools, as sent; their annotations are noted on the way."""
        result = await self._upstream.send_request(
            types.ListToolsRequest(params=params), types.ListToolsResult
        )
        self._remember(result.tools)
        return result

    def _remember(self, tools: Sequence[types.Tool]) -> None:
        for tool in tools:
            hints = tool.annotations
            self._risks[tool.name] = annotation_risk(
                read_only=hints.read_only_hint if hints else None,
                destructive=hints.destructive_hint if hints else None,
            )


_GONE = "is gone (its connection closed)"
_NOT_CALLED = "the tool was not called"


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def upstream_environment(token_env: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a stdio upstream gets: the proxy's own, less the agent token.

    The SDK passes only a safe subset (``HOME``, ``PATH``...) by default;
    the upstream needs what the MCP client's config set for it (API keys).
    """
    return {key: value for key, value in environ.items() if key != token_env}


@asynccontextmanager
async def _upstream(options: McpProxyOptions) -> AsyncIterator[ClientSession]:
    if options.url is not None:
        transport = streamable_http_client(options.url)
    else:
        argv = list(options.command)
        env = upstream_environment(options.token_env, os.environ)
        transport = stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env))
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def serve_mcp_proxy(options: McpProxyOptions) -> None:
    """Connect to the upstream, then serve the MCP client on stdio until it hangs up."""
    async with (
        _upstream(options) as upstream,
        RemoteGate(options.tapgate_url, options.token, retry_for=options.retry_for) as gate,
    ):
        server = _Proxy(upstream, gate, options).server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
