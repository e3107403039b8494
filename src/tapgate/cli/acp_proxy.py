"""``tapgate acp-proxy -- AGENT...``: an ACP agent whose permission requests tapgate answers.

Argument wiring and exit statuses only; the proxy is
:mod:`tapgate.client._acp_proxy`. The ``agent-client-protocol`` package is
an optional extra (``tapgate[acp]``), imported only when the command runs,
so a ``tapgate`` without it still starts, and this command says how to get it.

The tapgate server comes from ``--tapgate-url`` / ``$TAPGATE_URL`` and the
agent token from an environment variable, never from the command line that
an editor's settings and ``ps`` show.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

from tapgate.cli.agent_options import connection_options, retry_option
from tapgate.client import EXIT_CONFIG

if TYPE_CHECKING:
    from tapgate.cli.commands import Command

__all__ = ["INSTALL_HINT", "acp_proxy", "add_acp_proxy_command"]

INSTALL_HINT = "tapgate acp-proxy needs the ACP SDK: pip install 'tapgate[acp]'"


def add_acp_proxy_command(sub: Any, command: Command) -> None:
    """Add ``acp-proxy`` to the CLI's subcommands, bound to its table entry."""
    parser = sub.add_parser(
        "acp-proxy",
        help="run an ACP agent for an editor, its permission requests answered by tapgate",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--ask-locally-too",
        action="store_true",
        help="also show each permission request in the editor; the first answer wins "
        "and withdraws the other",
    )
    connection_options(parser, flag="--tapgate-url")
    retry_option(parser)
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND [ARG ...]")
    parser.set_defaults(func=command)


def acp_proxy(args: argparse.Namespace) -> int:
    """``tapgate acp-proxy``: serve until the editor or the agent hangs up; the agent's status."""
    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("tapgate: name the agent with -- AGENT_COMMAND [ARG ...]\n")
        return 2
    token = os.environ.get(args.token_env)
    if not token:
        sys.stderr.write(f"tapgate: no agent token: set ${args.token_env}\n")
        return EXIT_CONFIG
    try:
        from tapgate.client._acp_proxy import serve_acp_proxy
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "acp":
            raise
        sys.stderr.write(f"tapgate: {INSTALL_HINT}\n")
        return 2
    from tapgate.client import RemoteGate

    gate = RemoteGate(args.tapgate_url, token, retry_for=args.retry_for)
    try:
        return asyncio.run(
            serve_acp_proxy(
                argv, gate=gate, token_env=args.token_env, ask_locally=args.ask_locally_too
            )
        )
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the agent could not be started: one line for the editor's log
        sys.stderr.write(f"tapgate: cannot start the agent {argv[0]!r}: {exc}\n")
        return 69
