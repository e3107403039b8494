"""What every agent-side command parses alike: the server and token options, argument types.

``tapgate hook``, ``tapgate run``, ``tapgate mcp-proxy`` and ``tapgate
acp-proxy`` all find the server in ``--url`` / ``$TAPGATE_URL`` and the agent
token in an environment variable (never on the command line, where ``ps`` and
shell history would show it), and read durations the same way. Kept light:
the hook's start-up imports this module, so it loads ``argparse`` and the
client's answer module only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from tapgate.client._hook_answer import DEFAULT_URL, TOKEN_ENV

__all__ = [
    "Parser",
    "connection_options",
    "duration_arg",
    "retry_option",
    "seconds_arg",
    "submitted_arg",
]


class Parser(argparse.ArgumentParser):
    """``argparse``'s parser, its help formatter told the width instead of asking ``shutil``.

    ``add_argument`` builds a help formatter to check each metavar, and the
    formatter imports ``shutil`` (with ``zlib``, ``bz2``, ``lzma``) for the
    terminal's width: a few ms of every command, the hook's included. The
    width is found as ``shutil.get_terminal_size`` finds it. Sub-parsers are
    of this class too (``add_subparsers`` uses the parent's class; the hook's own, below).
    """

    def _get_formatter(self) -> argparse.HelpFormatter:
        formatter: Callable[..., argparse.HelpFormatter] = self.formatter_class
        return formatter(prog=self.prog, width=_columns() - 2)


def _columns() -> int:
    """``$COLUMNS``, else the terminal's width, else 80 (``shutil.get_terminal_size``'s rules)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def connection_options(parser: argparse.ArgumentParser, *, flag: str = "--url") -> None:
    """Options for the tapgate server (``flag``) and the variable holding the agent token."""
    parser.add_argument(
        flag,
        default=os.environ.get("TAPGATE_URL") or DEFAULT_URL,
        help=f"tapgate server (default: $TAPGATE_URL, else {DEFAULT_URL})",
    )
    parser.add_argument(
        "--token-env",
        default=TOKEN_ENV,
        metavar="NAME",
        help=f"environment variable holding the agent token (default: {TOKEN_ENV})",
    )


def retry_option(parser: argparse.ArgumentParser) -> None:
    """``--retry-for``: how long a waiting agent rides out a server that fails or restarts."""
    from tapgate.client import DEFAULT_RETRY_FOR

    parser.add_argument(
        "--retry-for",
        type=duration_arg,
        default=DEFAULT_RETRY_FOR,
        metavar="DURATION",
        help="keep retrying a tapgate server that is down or failing (a restart) this long, "
        "then give the error answer: seconds, or 90s, 2m, 1h (default: %(default)gs; 0: a few "
        "quick retries only); never past the request's deadline or --timeout",
    )


def duration_arg(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``2m`` or ``1h``; 0 is allowed (quick retries only)."""
    from tapgate.client._hook_answer import duration

    try:
        return duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds_arg(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``2m`` or ``1h``, more than 0 (``--timeout``)."""
    from tapgate.client._hook_answer import seconds

    try:
        return seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def submitted_arg(text: str) -> tuple[bytes, tuple[str, str] | None]:
    """The fast hook's hand-over (``--submitted``): what its submit got back."""
    from tapgate.client._hook_answer import decode_submitted

    try:
        return decode_submitted(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
