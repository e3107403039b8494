"""``tapgate mcp-proxy``: an upstream MCP server's tools, each call gated by tapgate.

Argument wiring and exit statuses only; the proxy itself is
:func:`tapgate.client.serve_mcp_proxy`. The MCP SDK is an optional extra
(``tapgate[mcp]``) imported only when the command runs, so a ``tapgate``
installed without it still starts, and this command then says how to get it.

The tapgate server comes from ``--tapgate-url`` / ``$TAPGATE_URL`` (``--url``
names the *upstream* here) and the agent token from an environment variable,
never from the command line, which MCP clients' configs and ``ps`` show.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import sys
import uuid
from typing import TYPE_CHECKING, Any

from tapgate.cli.agent_options import connection_options, duration_arg, retry_option
from tapgate.client import EXIT_CONFIG

if TYPE_CHECKING:
    from tapgate.cli.commands import Command

__all__ = ["EXIT_UNAVAILABLE", "INSTALL_HINT", "add_mcp_proxy_command", "mcp_proxy"]

EXIT_UNAVAILABLE = 69
"""The upstream could not be started or reached, or failed the proxy (``EX_UNAVAILABLE``)."""

INSTALL_HINT = "tapgate mcp-proxy needs the MCP SDK: pip install 'tapgate[mcp]'"
_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
"""Words of letters, digits and ``-`` joined by single ``_``: ``mcp__NAME__TOOL``
then splits one way. ``a__b`` with tool ``c`` and ``a`` with tool ``b__c`` were
both ``mcp__a__b__c`` (so were ``a_`` with ``b`` and ``a`` with ``_b``), and one
policy rule covered two servers' tools; no glob character can appear either."""


def add_mcp_proxy_command(sub: Any, command: Command) -> None:
    """Add ``mcp-proxy`` to the CLI's subcommands, bound to its table entry."""
    parser = sub.add_parser(
        "mcp-proxy",
        help="serve an MCP server's tools over stdio, every tool call gated by tapgate",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--name",
        required=True,
        type=_server_name,
        help="the server's name: its tools reach the policy as mcp__NAME__TOOL "
        "(letters, digits and -, joined by single _)",
    )
    parser.add_argument("--url", help="an upstream streamable-HTTP MCP server (instead of -- CMD)")
    parser.add_argument(
        "--trust-annotations",
        action="store_true",
        help="use the upstream's readOnlyHint / destructiveHint as the call's risk "
        "(only for a server you trust: annotations are the server's own claims)",
    )
    parser.add_argument(
        "--listing-timeout",
        type=duration_arg,
        metavar="DURATION",
        help="how long a call to a tool not listed yet may page through the upstream's "
        "tools/list (for its hints, and to refuse a tool it does not have) before it goes "
        "on to tapgate (default: 10s)",
    )
    parser.add_argument(
        "--session",
        help="session id sent with every call (default: a new one per proxy process)",
    )
    connection_options(parser, flag="--tapgate-url")  # --url names the upstream here
    retry_option(parser)
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...] (stdio)")
    parser.set_defaults(func=command)


def _server_name(text: str) -> str:
    if not _NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"use letters, digits and -, joined by single _ (tools are named "
            f"mcp__NAME__TOOL, which must name one server): {text!r}"
        )
    return text


def mcp_proxy(args: argparse.Namespace) -> int:
    """``tapgate mcp-proxy``: serve until the MCP client hangs up (0), or say why not."""
    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if bool(argv) == bool(args.url):
        sys.stderr.write("tapgate: name the upstream with -- COMMAND [ARG ...] or --url URL\n")
        return 2
    token = os.environ.get(args.token_env)
    if not token:
        sys.stderr.write(f"tapgate: no agent token: set ${args.token_env}\n")
        return EXIT_CONFIG
    try:
        from tapgate.client import McpProxyOptions, serve_mcp_proxy
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        sys.stderr.write(f"tapgate: {INSTALL_HINT}\n")
        return 2
    options = McpProxyOptions(
        name=args.name,
        command=argv,
        url=args.url,
        tapgate_url=args.tapgate_url,
        token=token,
        token_env=args.token_env,
        session=args.session or f"mcp-{args.name}-{uuid.uuid4().hex[:12]}",
        trust_annotations=args.trust_annotations,
        retry_for=args.retry_for,
    )
    if args.listing_timeout is not None:  # else the proxy's own LISTING_TIMEOUT
        options = dataclasses.replace(options, listing_timeout=args.listing_timeout)
    try:
        asyncio.run(serve_mcp_proxy(options))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one line for the MCP client's log, not a traceback
        sys.stderr.write(f"tapgate: MCP server {args.name!r}: {_innermost(exc)}\n")
        return EXIT_UNAVAILABLE
    return 0


def _innermost(exc: BaseException) -> str:
    """The one error inside anyio's task-group wrappers, as ``Type: message``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
