"""The ``tapgate`` command line's arguments: every subcommand, its options and help.

Arguments only: each subcommand's ``func`` is its entry in the typed table of
:mod:`~tapgate.bot.cli.commands`, and the agent-side commands' arguments live
with them in :mod:`~tapgate.bot.cli.agent`.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from tapgate.bot.cli.agent import add_agent_commands
from tapgate.bot.cli.commands import COMMANDS
from tapgate.core.models import RISKS

__all__ = ["DESCRIPTION", "build_parser"]

DESCRIPTION = (
    "The ``tapgate`` command line: run the server, check a config, explain a verdict, operate."
)
"""What ``tapgate --help`` says first."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line; each subcommand's ``func`` is its table entry."""
    parser = argparse.ArgumentParser(prog="tapgate", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check-config", help="validate a config file and summarise it")
    _config_option(check)
    check.set_defaults(func=COMMANDS["check-config"])

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply the database migrations")
    _config_option(upgrade)
    upgrade.add_argument("--url", help="store URL (overrides the config's store.url)")
    upgrade.set_defaults(func=COMMANDS["db upgrade"])

    explain = sub.add_parser("explain", help="show the verdict for a tool call and why")
    _config_option(explain)
    explain.add_argument("--tool", required=True, help="tool name")
    explain.add_argument("--args", default="{}", help="tool arguments as a JSON object")
    explain.add_argument("--agent", default="default", help="agent name (for per-agent rules)")
    explain.add_argument("--risk", choices=RISKS, help="the risk the tool declares")
    explain.add_argument("--json", action="store_true", help="print a JSON object")
    explain.set_defaults(func=COMMANDS["explain"])
    _operator_commands(sub)
    add_agent_commands(sub, hook=COMMANDS["hook claude-code"], run=COMMANDS["run"])
    return parser


def _operator_commands(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run the webhook server and agent API")
    _config_option(serve)
    serve.add_argument("--host", help="interface to bind (default: server.host)")
    serve.add_argument("--port", type=int, help="port (default: server.port)")
    serve.set_defaults(func=COMMANDS["serve"])

    pending = sub.add_parser("pending", help="list requests waiting for a decision")
    _config_option(pending)
    pending.add_argument("--limit", type=int, default=100)
    pending.add_argument("--json", action="store_true", help="one JSON object per line")
    pending.set_defaults(func=COMMANDS["pending"])

    resolve = sub.add_parser("resolve", help="decide a request by hand (audited break-glass)")
    _config_option(resolve)
    resolve.add_argument("id", help="request id")
    resolve.add_argument("verdict", choices=("approve", "deny"))
    resolve.add_argument("--as", dest="as_", required=True, help="the approver deciding")
    resolve.add_argument("--reason", help="told to the agent")
    resolve.add_argument("--scope", choices=("once", "session", "always"), default="once")
    resolve.set_defaults(func=COMMANDS["resolve"])

    grants = sub.add_parser("grants", help="list or revoke remembered approvals")
    grants_sub = grants.add_subparsers(dest="grants_command", required=True)
    listing = grants_sub.add_parser("list", help="list grants")
    _config_option(listing)
    listing.add_argument("--all", action="store_true", help="include revoked and expired")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=COMMANDS["grants list"])
    revoke = grants_sub.add_parser("revoke", help="revoke a grant")
    _config_option(revoke)
    revoke.add_argument("id", help="grant id")
    revoke.add_argument("--as", dest="as_", default="operator", help="who revokes (audited)")
    revoke.set_defaults(func=COMMANDS["grants revoke"])

    audit = sub.add_parser("audit", help="print, export or verify the audit log")
    _config_option(audit)
    audit.add_argument("--since", help="ISO 8601 time, e.g. 2026-11-21T09:00")
    audit.add_argument("--request", help="only this request id")
    audit.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="jsonl: one row per line with its hashes, verifiable offline",
    )
    audit.set_defaults(func=COMMANDS["audit"])
    audit_sub = audit.add_subparsers(dest="audit_command")
    verify = audit_sub.add_parser(
        "verify", help="check the hash chain; exit 1 and name the first broken link"
    )
    # Placed before or after `verify`: a default here would replace the one `audit` parsed.
    verify.add_argument("--config", default=argparse.SUPPRESS, help="YAML config file")
    verify.add_argument(
        "--file", help="check an exported `tapgate audit --format jsonl` copy ('-': stdin)"
    )
    verify.add_argument(
        "--anchor",
        action="append",
        metavar="ROW_ID:HASH",
        help="a head printed by an earlier check, which must still hold (repeatable)",
    )
    verify.set_defaults(func=COMMANDS["audit verify"])


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=os.environ.get("TAPGATE_CONFIG"),
        help="YAML config file (default: $TAPGATE_CONFIG; none = built-in defaults)",
    )
