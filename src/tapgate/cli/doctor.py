"""``tapgate doctor``: does the configured world answer? One line per check; 0 if all pass.

Argument wiring, output and exit status; the checks are
:mod:`~tapgate.cli.doctor_checks` and the test card
:mod:`~tapgate.cli.send_test`. It reads the whole config (the chat secrets
are what it checks) and asks the platforms over the network, so it belongs
where ``tapgate serve`` runs, with the same environment.

Exit status: 0 every check passed, 1 one failed (each failure's line says
why), 2 a config mistake or a database that cannot be used (one line, as
every command).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tapgate.channels.contract import CheckResult
    from tapgate.cli.commands import Command
    from tapgate.config import Config

__all__ = ["EXIT_FAILED", "add_doctor_command", "doctor", "line"]

EXIT_FAILED = 1
"""A check failed (a config or database mistake is 2, as for every command)."""

_DEFAULT_WAIT = 120.0


def add_doctor_command(sub: Any, command: Command, config_option: Any) -> None:
    """Add ``doctor`` to the CLI's subcommands, bound to its table entry."""
    parser = sub.add_parser(
        "doctor",
        help="check each channel's credentials, each approver's reach and public_url, live",
        description="Ask each enabled channel's platform whether the credentials work and each "
        "approver is reachable, and whether server.public_url answers /healthz. One line per "
        "check; exit 0 only when every check passes. With --send-test NAME: send NAME a real "
        "test card on each of their channels through the running server, and report per channel "
        "whether it was delivered and tapped within --wait.",
    )
    config_option(parser)
    parser.add_argument(
        "--send-test",
        metavar="NAME",
        help="an approver to send a test card to, on every channel they have "
        "(needs `tapgate serve` running on the same store; approving it runs nothing)",
    )
    parser.add_argument(
        "--wait",
        type=_seconds,
        default=_DEFAULT_WAIT,
        metavar="SECONDS",
        help="with --send-test: how long to wait for the cards to be delivered and tapped "
        "(default: %(default)g)",
    )
    parser.set_defaults(func=command)


def doctor(args: argparse.Namespace, config: Config) -> int:
    """Run the checks (or send the test cards), print one line each, exit 0 only if all pass."""
    results = _send_test(config, args.send_test, args.wait) if args.send_test else _checks(config)
    for result in results:
        print(line(result))
    failed = sum(not r.ok for r in results)
    if failed:
        print(f"tapgate doctor: {failed} of {len(results)} checks failed", file=sys.stderr)
        return EXIT_FAILED
    return 0


def line(result: CheckResult) -> str:
    """``✓ line: channel access token`` / ``✗ slack: bot token: auth.test: token_revoked …``."""
    from tapgate.cli.text import paint

    mark = paint("✓", "green") if result.ok else paint("✗", "red")
    where = f"{result.channel}: " if result.channel else ""
    detail = f": {result.detail}" if result.detail else ""
    return f"{mark} {where}{result.what}{detail}"


def _checks(config: Config) -> list[CheckResult]:
    from tapgate.cli.database import open_existing
    from tapgate.cli.doctor_checks import check_channels, check_public_url, check_reach
    from tapgate.errors import StoreError

    async def run() -> list[CheckResult]:
        try:  # the conversations approvers opened (Teams); the checks run without them too
            store = await open_existing(config.store_url)
        except StoreError:
            store = None
        try:
            book = None if store is None else store.conversations
            checked = await check_channels(config, book)
        finally:
            if store is not None:
                await store.close()
        results = [r for found in checked.values() for r in found]
        results += check_reach(config, checked)
        results += await check_public_url(config)
        return results

    return asyncio.run(run())


def _send_test(config: Config, name: str, wait: float) -> list[CheckResult]:
    from tapgate.cli.database import open_existing, store_errors
    from tapgate.cli.send_test import send_test
    from tapgate.decisions.check_cards import card_policy
    from tapgate.gate.gate import Gate

    async def run() -> list[CheckResult]:
        store = await open_existing(config.store_url)
        try:
            policy = card_policy(name, wait=wait)
            gate = Gate(store=store, policy=policy, directory=config.directory())
            return await send_test(gate, name, wait=wait)
        finally:
            await store.close()

    with store_errors(config.store_url):
        return asyncio.run(run())


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 1 and 3600 seconds, got {text}")
    return value
