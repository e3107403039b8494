"""The ``tapgate`` command line's arguments: every subcommand, its options and help.

Arguments only: each subcommand's ``func`` is its entry in the typed table of
:mod:`~tapgate.cli.commands`, and the agent-side commands' arguments live
with them in :mod:`~tapgate.cli.agent`.

``build_parser(command)`` adds only that subcommand's parser: the hook runs
on every Claude Code tool call and should not pay for the arguments (and the
imports behind their defaults and choices) of ten commands it is not.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from tapgate import __version__
from tapgate.cli.agent import add_agent_commands
from tapgate.cli.agent_options import Parser
from tapgate.cli.commands import COMMANDS

__all__ = ["DESCRIPTION", "EPILOG", "SUBCOMMANDS", "build_parser"]

DESCRIPTION = (
    "tapgate: an approval gate for AI-agent tool calls. Run the server, check a config, "
    "explain a verdict, and operate on requests, grants and the audit log."
)
EPILOG = (
    "Exit status: 0 done, 2 bad input, a config mistake or a database that cannot be used "
    "(one line on stderr, naming the YAML path). `tapgate COMMAND --help` describes each "
    "command; docs/configuration.md the config file."
)
"""What ``tapgate --help`` says first."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; each subcommand's ``func`` is its table entry.

    With ``command`` (a key of :data:`SUBCOMMANDS`) only that subcommand is
    added (``hook`` and ``run`` come together); without it (``--help``, a
    mistyped name) every one is.
    """
    parser = Parser(prog="tapgate", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {__version__}",
        help="print the installed version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    names = list(SUBCOMMANDS) if command is None else [command]
    for add in dict.fromkeys(SUBCOMMANDS[name] for name in names):  # hook and run: one builder
        add(sub)
    return parser


def _check_config(sub: Any) -> None:
    check = sub.add_parser("check-config", help="validate a config file and summarise it")
    _config_option(check)
    check.set_defaults(func=COMMANDS["check-config"])


def _db(sub: Any) -> None:
    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply the database migrations")
    _config_option(upgrade)
    upgrade.add_argument("--url", help="store URL (overrides the config's store.url)")
    upgrade.set_defaults(func=COMMANDS["db upgrade"])


def _explain(sub: Any) -> None:
    from tapgate.gate.models import RISKS

    explain = sub.add_parser("explain", help="show the verdict for a tool call and why")
    _config_option(explain)
    explain.add_argument("--tool", required=True, help="tool name")
    explain.add_argument("--args", default="{}", help="tool arguments as a JSON object")
    explain.add_argument(
        "--agent",
        help="an agent from the config's agents (applies its per-agent rules; "
        "default: global rules only)",
    )
    explain.add_argument("--risk", choices=RISKS, help="the risk the tool declares")
    explain.add_argument("--json", action="store_true", help="print a JSON object")
    explain.set_defaults(func=COMMANDS["explain"])


def _serve(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run the webhook server and agent API")
    _config_option(serve, required=True)
    serve.add_argument("--host", help="interface to bind (default: server.host)")
    serve.add_argument(
        "--port", help="TCP port, 1-65535, or 0 for a free one (default: server.port)"
    )
    serve.set_defaults(func=COMMANDS["serve"])


def _pending(sub: Any) -> None:
    pending = sub.add_parser("pending", help="list requests waiting for a decision")
    _config_option(pending)
    pending.add_argument(
        "--limit",
        type=_positive,
        default=100,
        help="show at most this many (default: %(default)s)",
    )
    pending.add_argument("--json", action="store_true", help="one JSON object per line")
    pending.set_defaults(func=COMMANDS["pending"])


def _resolve(sub: Any) -> None:
    resolve = sub.add_parser("resolve", help="decide a request by hand (audited break-glass)")
    _config_option(resolve)
    resolve.add_argument("id", help="request id")
    resolve.add_argument(
        "verdict", choices=("approve", "deny"), help="approve: the call runs; deny: it does not"
    )
    resolve.add_argument(
        "--as",
        dest="as_",
        metavar="NAME",
        required=True,
        help="the approver deciding, a name from the config's approvers (audited)",
    )
    resolve.add_argument("--reason", help="told to the agent (and the answer to a question)")
    resolve.add_argument(
        "--scope",
        choices=("once", "session", "always"),
        default="once",
        help="with approve: once (this call), session (matching calls in its session) or "
        "always (matching calls of this agent); default: once",
    )
    resolve.set_defaults(func=COMMANDS["resolve"])


def _inbox(sub: Any) -> None:
    inbox = sub.add_parser("inbox", help="decide pending requests from this terminal, one key each")
    _config_option(inbox)
    inbox.add_argument("--as", dest="as_", required=True, help="the approver deciding")
    inbox.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    inbox.set_defaults(func=COMMANDS["inbox"])


def _inbox_link(sub: Any) -> None:
    from tapgate.cli.inbox_link import add_inbox_link_command

    add_inbox_link_command(sub, COMMANDS["inbox-link"], _config_option)


def _doctor(sub: Any) -> None:
    from tapgate.cli.doctor import add_doctor_command

    add_doctor_command(sub, COMMANDS["doctor"], _config_option)


def _grants(sub: Any) -> None:
    grants = sub.add_parser("grants", help="list or revoke remembered approvals")
    grants_sub = grants.add_subparsers(dest="grants_command", required=True)
    listing = grants_sub.add_parser("list", help="list grants")
    _config_option(listing)
    listing.add_argument("--all", action="store_true", help="include revoked and expired")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(func=COMMANDS["grants list"])
    revoke = grants_sub.add_parser("revoke", help="revoke a grant")
    _config_option(revoke)
    revoke.add_argument("id", help="grant id")
    revoke.add_argument(
        "--as", dest="as_", metavar="NAME", default="operator", help="who revokes (audited)"
    )
    revoke.set_defaults(func=COMMANDS["grants revoke"])


def _audit(sub: Any) -> None:
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
    verify.add_argument(
        "--config", metavar="FILE", default=argparse.SUPPRESS, help="YAML config file"
    )
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


def _agent(sub: Any) -> None:
    hook, codex = COMMANDS["hook claude-code"], COMMANDS["hook codex"]
    add_agent_commands(sub, hook=hook, run=COMMANDS["run"], codex=codex)


def _mcp_proxy(sub: Any) -> None:
    from tapgate.cli.mcp_proxy import add_mcp_proxy_command  # asyncio: not for the hook

    add_mcp_proxy_command(sub, COMMANDS["mcp-proxy"])


def _acp_proxy(sub: Any) -> None:
    from tapgate.cli.acp_proxy import add_acp_proxy_command  # asyncio: not for the hook

    add_acp_proxy_command(sub, COMMANDS["acp-proxy"])


SUBCOMMANDS: dict[str, Callable[[Any], None]] = {
    "check-config": _check_config,
    "db": _db,
    "explain": _explain,
    "serve": _serve,
    "pending": _pending,
    "resolve": _resolve,
    "inbox": _inbox,
    "inbox-link": _inbox_link,
    "doctor": _doctor,
    "grants": _grants,
    "audit": _audit,
    "hook": _agent,
    "run": _agent,
    "mcp-proxy": _mcp_proxy,
    "acp-proxy": _acp_proxy,
}
"""Each first word of a command line and what adds its parser, in ``--help``'s order."""


def _config_option(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    default = "serve refuses to start without one" if required else "none: built-in defaults"
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=os.environ.get("TAPGATE_CONFIG"),
        help=f"YAML config file (default: $TAPGATE_CONFIG; {default})",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
