"""``tapgate serve``: say what was loaded, listen, run until SIGTERM / SIGINT, say it stopped.

The listening sockets are bound here, before the app starts: a port in use
(or not ours to take) is then one line and exit status 2, before the store is
opened or migrated, rather than a traceback from inside aiohttp. ``--host``
and ``--port`` get the same checks the config's ``server.host`` and
``server.port`` do.

The banner (:mod:`~tapgate.cli.banner`) goes to standard output once
the sockets are bound, the logs to standard error.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import socket

from tapgate.cli.banner import banner
from tapgate.cli.commands import UsageError
from tapgate.cli.text import paint
from tapgate.config import Config

__all__ = ["bind", "parse_port", "serve"]

_MAX_PORT = 65535


def serve(args: argparse.Namespace, config: Config) -> int:
    """Run the server until SIGTERM / SIGINT, then shut down gracefully."""
    from aiohttp import web

    from tapgate.server.access_log import access_log_options
    from tapgate.server.app import build_app

    host = args.host or config.server.host
    port = config.server.port if args.port is None else parse_port(args.port)
    config_path = os.path.abspath(args.config)
    sockets = bind(host, port)
    print(banner(config, config_path), flush=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    listening = ", ".join(_url(s) for s in sockets)
    web.run_app(
        build_app(config, config_path=config_path),
        sock=sockets,
        shutdown_timeout=15,
        **access_log_options(config.server.access_log),
        print=lambda _: print(
            paint(f"tapgate listening on {listening}", "green") + " (Ctrl+C to stop)", flush=True
        ),
    )
    print("tapgate stopped: pending requests stay in the store and resume at the next start")
    return 0


def parse_port(text: str) -> int:
    """``--port``: a TCP port (1-65535), or 0 for one the system picks.

    0 is for programs that start tapgate and read the port it got from the
    ``tapgate listening on …`` line: no window between choosing a free port
    and binding it, where another process could take it.
    """
    try:
        port = int(text)
    except ValueError:
        raise UsageError(f"--port: expected a port number (0-65535), got {text!r}") from None
    if not 0 <= port <= _MAX_PORT:
        raise UsageError(f"--port: must be between 0 and {_MAX_PORT}, got {port}")
    return port


def bind(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address ``host`` resolves to, as asyncio would bind them.

    Raises :class:`UsageError` (one line, exit status 2) when an address
    cannot be resolved or bound: in use, not local, or a privileged port.
    """
    try:
        infos = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE | socket.AI_ADDRCONFIG
        )
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio does: one socket per family
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError as exc:
        for sock in bound:
            sock.close()
        reason = exc.strerror or str(exc)
        hint = " (another tapgate? pick another with --port)" if _in_use(exc) else ""
        raise UsageError(f"cannot listen on {host}:{port}: {reason.lower()}{hint}") from None
    return bound


def _in_use(exc: OSError) -> bool:
    return exc.errno == errno.EADDRINUSE


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    return f"http://{shown}:{port}"
