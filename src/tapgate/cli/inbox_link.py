"""``tapgate inbox-link --as NAME``: a sign-in link to the web inbox, from the server's shell.

The chats mint links for a person they have verified (a signed Slack
command, a signed LINE message). Without a chat (the console alone) nobody
could sign in; the operator's shell is the other place a person is already
trusted, the one ``tapgate resolve`` decides from. So this command makes the
same single-use, ten-minute link a chat's ``inbox`` command makes
(:meth:`tapgate.decisions.sign_in.SignIns.link`), audited as
``inbox_link_issued`` with ``via: cli``, and prints it. It opens the store
only (like ``pending``): no chat secret is needed.

The link points at ``server.public_url``; without one, at the server's own
listen address (a wildcard bind becomes the loopback address), and stderr
says so: such a link opens only where that address is reachable.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import TYPE_CHECKING, Any

from tapgate.errors import ConfigError

if TYPE_CHECKING:
    from tapgate.cli.commands import Command
    from tapgate.config import Config
    from tapgate.gate.gate import Gate

__all__ = ["VIA", "add_inbox_link_command", "inbox_link", "link_base"]

VIA = "cli"
"""What the audit line's ``via`` says vouched for the person: the server's shell."""

_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1"}  # noqa: S104 - read, never bound


def add_inbox_link_command(sub: Any, command: Command, config_option: Any) -> None:
    """Add ``inbox-link`` to the CLI's subcommands, bound to its table entry."""
    parser = sub.add_parser(
        "inbox-link",
        help="print a single-use sign-in link to the web inbox for an approver",
        description="Print a sign-in link to the web inbox for a configured approver: "
        "single-use, valid for 10 minutes, audited. Needs the store only.",
    )
    config_option(parser)
    parser.add_argument(
        "--as",
        dest="as_",
        metavar="NAME",
        required=True,
        help="the approver the link signs in, a name from the config's approvers",
    )
    parser.set_defaults(func=command)


def link_base(config: Config) -> tuple[str, bool]:
    """Where the link points; whether that is ``server.public_url`` (else: the listen address)."""
    server = config.server
    if server.public_url is not None:
        return str(server.public_url), True
    host = _WILDCARDS.get(server.host, server.host)
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass  # a host name
    return f"http://{host}:{server.port}", False


def inbox_link(args: argparse.Namespace, config: Config) -> int:
    """Mint and print ``args.as_``'s link; a name that is not an approver is a ``ConfigError``."""
    from tapgate.cli.database import with_gate
    from tapgate.decisions.sign_in import LINK_TTL, SignIns
    from tapgate.server.web_inbox import sign_in_url

    name: str = args.as_
    if config.directory().get(name) is None:
        known = ", ".join(a.name for a in config.approvers) or "none configured"
        raise ConfigError("approvers", f"no approver named {name!r} (approvers: {known})")

    async def mint(gate: Gate) -> str:
        return await SignIns(gate).link(name, via=VIA)

    base, public = link_base(config)
    token = with_gate(config, mint)
    if not public:
        print(
            f"tapgate: no server.public_url: the link uses the server's own address {base} "
            "(server.host and server.port); it opens only where that address is reachable",
            file=sys.stderr,
        )
    minutes = int(LINK_TTL.total_seconds() // 60)
    print(
        f"tapgate: sign-in link for {name}, single-use, valid {minutes} minutes:", file=sys.stderr
    )
    print(sign_in_url(base, token))
    return 0
