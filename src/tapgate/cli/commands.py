"""The ``tapgate`` subcommands as one typed table: each command line maps to a callable.

Typed so that mypy checks every entry: the CLI used to look the operator
commands up by name (``getattr(import_module(...))``), which no checker can
follow. The operator commands' entries are small functions that import their
module when run, not when the table is built: ``tapgate hook claude-code``
runs on every Claude Code tool call and must start without the server, the
store, SQLAlchemy and the config models (``tests/test_conventions.py``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from tapgate.cli import agent

if TYPE_CHECKING:
    from tapgate.config import Config

__all__ = ["COMMANDS", "Command", "UsageError", "load", "load_store"]

Command = Callable[[argparse.Namespace], int]
"""A subcommand: the parsed command line in, the exit status out."""


class UsageError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


def load(path: str | None) -> Config:
    """The config at ``path``, or the built-in defaults when there is none."""
    from tapgate.config import load_config, parse_config

    return load_config(path) if path else parse_config({})


def load_store(path: str | None, *, with_policy: bool = False, with_server: bool = False) -> Config:
    """The store section and approver names at ``path`` (the operator's commands need no more);
    ``with_policy`` / ``with_server``: that section too (see ``load_store_config``)."""
    from tapgate.config import load_store_config, parse_config

    if not path:
        return parse_config({})
    return load_store_config(path, with_policy=with_policy, with_server=with_server)


def _check_config(args: argparse.Namespace) -> int:
    from tapgate.cli import config_commands

    return config_commands.check_config(args, load(args.config))


def _explain(args: argparse.Namespace) -> int:
    from tapgate.cli import config_commands

    return config_commands.explain(args, load(args.config))


def _db_upgrade(args: argparse.Namespace) -> int:
    from tapgate.cli import ops

    return ops.db_upgrade(args.url or load_store(args.config).store_url)


def _serve(args: argparse.Namespace) -> int:
    from tapgate.cli import serve

    if not args.config:
        raise UsageError(
            "serve needs a config: --config FILE or $TAPGATE_CONFIG "
            "(to try tapgate: tapgate serve --config examples/local.yaml)"
        )
    return serve.serve(args, load(args.config))


def _pending(args: argparse.Namespace) -> int:
    from tapgate.cli import ops

    return ops.pending(args, load_store(args.config))


def _resolve(args: argparse.Namespace) -> int:
    from tapgate.cli import ops

    remembers = args.verdict == "approve" and args.scope != "once"
    return ops.resolve(args, load_store(args.config, with_policy=remembers))


def _inbox(args: argparse.Namespace) -> int:
    from tapgate.cli import inbox

    return inbox.inbox(args, load(args.config))


def _inbox_link(args: argparse.Namespace) -> int:
    from tapgate.cli import inbox_link

    return inbox_link.inbox_link(args, load_store(args.config, with_server=True))


def _doctor(args: argparse.Namespace) -> int:
    from tapgate.cli import doctor

    return doctor.doctor(args, load(args.config))


def _grants_list(args: argparse.Namespace) -> int:
    from tapgate.cli import ops

    return ops.grants_list(args, load_store(args.config))


def _grants_revoke(args: argparse.Namespace) -> int:
    from tapgate.cli import ops

    return ops.grants_revoke(args, load_store(args.config))


def _mcp_proxy(args: argparse.Namespace) -> int:
    from tapgate.cli import mcp_proxy

    return mcp_proxy.mcp_proxy(args)


def _hook_codex(args: argparse.Namespace) -> int:
    from tapgate.cli import codex_hook

    return codex_hook.hook_codex(args)


def _acp_proxy(args: argparse.Namespace) -> int:
    from tapgate.cli import acp_proxy

    return acp_proxy.acp_proxy(args)


def _audit(args: argparse.Namespace) -> int:
    from tapgate.cli import audit

    return audit.audit(args, load_store(args.config))


def _audit_verify(args: argparse.Namespace) -> int:
    from tapgate.cli import audit

    return audit.verify(args, None if args.file is not None else load_store(args.config))


COMMANDS: Final[Mapping[str, Command]] = {
    "check-config": _check_config,
    "db upgrade": _db_upgrade,
    "explain": _explain,
    "serve": _serve,
    "pending": _pending,
    "resolve": _resolve,
    "inbox": _inbox,
    "inbox-link": _inbox_link,
    "doctor": _doctor,
    "grants list": _grants_list,
    "grants revoke": _grants_revoke,
    "audit": _audit,
    "audit verify": _audit_verify,
    "hook claude-code": agent.hook_claude_code,
    "hook codex": _hook_codex,
    "run": agent.run,
    "mcp-proxy": _mcp_proxy,
    "acp-proxy": _acp_proxy,
}
"""Every subcommand, keyed as typed on the command line; the parser binds each to its entry."""
