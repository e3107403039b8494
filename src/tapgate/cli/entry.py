"""The ``tapgate`` command line: run the server, check a config, explain a verdict, operate.

This module is the entry point: it parses the command line
(:mod:`~tapgate.cli.parser`, built for the one subcommand given, and not
at all for ``--version``), runs the subcommand the typed table binds
(:mod:`~tapgate.cli.commands`) and turns errors into exit statuses. The
agent-side commands (``tapgate hook claude-code``, ``tapgate run``) are
wired in :mod:`tapgate.cli.agent`.

Every command reports bad input (a missing file, invalid YAML or JSON, a config
mistake) and a database it cannot use (unreachable, not found, not migrated,
not a database, at a revision this tapgate does not know) as one clear line
on stderr and exit status 2, never as a traceback and never with the
database password: operators run these by hand and in CI.

The operator commands (``pending``, ``resolve``, ``grants``, ``audit``) never
create or migrate the database; ``tapgate db upgrade`` creates and migrates it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tapgate.errors import TapgateError

if TYPE_CHECKING:
    from tapgate.cli.commands import Command

__all__ = ["EXIT_USAGE", "main"]

EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tapgate`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # answered before argparse is even imported
        from tapgate import __version__

        print(f"tapgate {__version__}")
        return 0
    from tapgate.cli.quick_hook import first_try, forget_input

    forget_input()
    if argv[:2] in (["hook", "claude-code"], ["hook", "codex"]):
        handed = first_try(argv)  # a call decided at once is answered before argparse
        if handed is None:
            return 0
        argv = handed
    from tapgate.cli.commands import UsageError
    from tapgate.cli.parser import SUBCOMMANDS, build_parser

    parser = build_parser(argv[0] if argv and argv[0] in SUBCOMMANDS else None)
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None) and argv[:1] == ["hook"]:
            from tapgate.cli.agent import hook_misconfigured

            # Claude Code needs JSON and exit 0 even for a mistyped subcommand.
            return hook_misconfigured("misconfigured (see the usage on stderr)")
        raise
    args.command_line = argv
    if extra:
        reject = getattr(args, "reject_extra", None)
        if reject is None:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        rejected: int = reject(extra)  # the hook answers even this in JSON
        return rejected
    try:
        command: Command = args.func
        result = command(args)
    except (TapgateError, UsageError) as exc:
        from tapgate.cli.text import paint

        print(f"tapgate: {paint('error', 'red', sys.stderr)}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return result
