"""The ``tapgate`` command line: run the server, check a config, explain a verdict, operate.

The agent-side commands (``tapgate hook claude-code``, ``tapgate run``) are
wired in :mod:`tapgate.bot._cli_agent`.

Every command reports bad input (a missing file, invalid YAML or JSON, a config
mistake) and a database it cannot use (unreachable, not found, not migrated,
not a database, at a revision this tapgate does not know) as one clear line
on stderr and exit status 2, never as a traceback and never with the
database password: operators run these by hand and in CI.

The operator commands (``pending``, ``resolve``, ``grants``, ``audit``) never
create or migrate the database; ``tapgate db upgrade`` creates and migrates it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

from tapgate.bot._cli_agent import add_agent_commands, hook_misconfigured
from tapgate.core.models import RISKS, ToolCall
from tapgate.errors import TapgateError

if TYPE_CHECKING:
    from tapgate.bot.config import Config

__all__ = ["main"]

EXIT_USAGE = 2


class _UsageError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tapgate`` console script."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None) and argv[:1] == ["hook"]:
            # Claude Code needs JSON and exit 0 even for a mistyped subcommand.
            return hook_misconfigured("misconfigured (see the usage on stderr)")
        raise
    if extra:
        reject = getattr(args, "reject_extra", None)
        if reject is None:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        rejected: int = reject(extra)  # the hook answers even this in JSON
        return rejected
    try:
        result: int = args.func(args)
    except (TapgateError, _UsageError) as exc:
        print(f"tapgate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tapgate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check-config", help="validate a config file and summarise it")
    _config_option(check)
    check.set_defaults(func=_check_config)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply the database migrations")
    _config_option(upgrade)
    upgrade.add_argument("--url", help="store URL (overrides the config's store.url)")
    upgrade.set_defaults(func=_db_upgrade)

    explain = sub.add_parser("explain", help="show the verdict for a tool call and why")
    _config_option(explain)
    explain.add_argument("--tool", required=True, help="tool name")
    explain.add_argument("--args", default="{}", help="tool arguments as a JSON object")
    explain.add_argument("--agent", default="default", help="agent name (for per-agent rules)")
    explain.add_argument("--risk", choices=RISKS, help="the risk the tool declares")
    explain.add_argument("--json", action="store_true", help="print a JSON object")
    explain.set_defaults(func=_explain)
    _operator_commands(sub)
    add_agent_commands(sub)
    return parser


def _operator_commands(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run the webhook server and agent API")
    _config_option(serve)
    serve.add_argument("--host", help="interface to bind (default: server.host)")
    serve.add_argument("--port", type=int, help="port (default: server.port)")
    serve.set_defaults(func=_with_config("serve"))

    pending = sub.add_parser("pending", help="list requests waiting for a decision")
    _config_option(pending)
    pending.add_argument("--limit", type=int, default=100)
    pending.add_argument("--json", action="store_true", help="one JSON object per line")
    pending.set_defaults(func=_with_config("pending"))

    resolve = sub.add_parser("resolve", help="decide a request by hand (audited break-glass)")
    _config_option(resolve)
    resolve.add_argument("id", help="request id")
    resolve.add_argument("verdict", choices=("approve", "deny"))
    resolve.add_argument("--as", dest="as_", required=True, help="the approver deciding")
    resolve.add_argument("--reason", help="told to the agent")
    resolve.add_argument("--scope", choices=("once", "session", "always"), default="once")
    resolve.set_defaults(func=_with_config("resolve"))

    grants = sub.add_parser("grants", help="list or revoke remembered approvals")
    grants_sub = grants.add_subparsers(dest="grants_command", required=True)
    listing = grants_sub.add_parser("list", help="list grants")
    _config_option(listing)
    listing.add_argument("--all", action="store_true", help="include revoked and expired")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_with_config("grants_list"))
    revoke = grants_sub.add_parser("revoke", help="revoke a grant")
    _config_option(revoke)
    revoke.add_argument("id", help="grant id")
    revoke.add_argument("--as", dest="as_", default="operator", help="who revokes (audited)")
    revoke.set_defaults(func=_with_config("grants_revoke"))

    audit = sub.add_parser("audit", help="print the audit log")
    _config_option(audit)
    audit.add_argument("--since", help="ISO 8601 time, e.g. 2026-11-21T09:00")
    audit.add_argument("--request", help="only this request id")
    audit.add_argument("--format", choices=("text", "jsonl"), default="text")
    audit.set_defaults(func=_with_config("audit"))


def _with_config(command: str) -> Any:
    """The operator command ``command`` of ``_cli_ops``, given the loaded config.

    Imported when run, not when the parser is built: the agent-side commands
    (``hook``, ``run``) must start without loading the server, the store and
    SQLAlchemy.
    """

    def run(args: argparse.Namespace) -> int:
        operation = getattr(import_module("tapgate.bot._cli_ops"), command)
        result: int = operation(args, _load(args.config))
        return result

    return run


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=os.environ.get("TAPGATE_CONFIG"),
        help="YAML config file (default: $TAPGATE_CONFIG; none = built-in defaults)",
    )


def _load(path: str | None) -> Config:
    from tapgate.bot.config import load_config, parse_config

    return load_config(path) if path else parse_config({})


def _check_config(args: argparse.Namespace) -> int:
    config = _load(args.config)
    spec = config.policy_spec()
    rules = len(spec.rules) + sum(len(r) for r in spec.agents.values())
    print(f"config OK: {args.config or '(built-in defaults)'}")
    from tapgate.bot._config_models import display_url

    print(f"  store: {display_url(config.store_url)}")
    print(
        f"  agents: {len(config.agents)}, approvers: {len(config.approvers)}, "
        f"channels: {', '.join(config.enabled_channels) or 'none'}"
    )
    print(
        f"  tools: {len(spec.tools)}, rules: {rules}, "
        f"default timeout: {spec.default_timeout:g}s, on_timeout: {spec.on_timeout}"
    )
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    """Create the database if needed and migrate it to the head revision."""
    from tapgate.bot._cli_ops import store_errors
    from tapgate.core.store import Store
    from tapgate.core.store.engine import current_revision

    url = args.url or _load(args.config).store_url

    async def run() -> str | None:
        store = await Store.open(url)
        try:
            return await store.run(current_revision)
        finally:
            await store.close()

    with store_errors(url):
        revision = asyncio.run(run())
    print(f"database at revision {revision}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    config = _load(args.config)
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise _UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise _UsageError('--args must be a JSON object, e.g. \'{"command": "ls"}\'')
    from tapgate.core.policy import Policy

    policy = Policy(config.policy_spec())
    call = ToolCall(tool=args.tool, arguments=arguments, agent=args.agent, risk=args.risk)
    verdict = policy.evaluate(call)
    out: dict[str, Any] = {
        "decision": verdict.action,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "risk": verdict.risk,
    }
    if verdict.action == "ask":
        out["approvers"] = list(config.directory().expand(verdict.approvers))
        out["timeout"] = verdict.timeout
        out["grantable"] = verdict.grantable
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{verdict.action.upper()}  ({verdict.rule})")
        print(f"  {verdict.reason}")
        if verdict.action == "ask":
            print(
                f"  approvers: {', '.join(out['approvers']) or '(none)'}; "
                f"timeout {verdict.timeout:g}s"
            )
    return 0
