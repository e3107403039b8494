"""Test-only hooks of the server, read from the environment and refused in production.

``TAPGATE_TEST_APPLY_DELAY=<seconds>`` makes the webhooks wait that long
between a tap's 200 and applying it (:attr:`tapgate.decisions.webhook_inbox.Inbox.apply_delay`),
so a test can SIGKILL a real ``tapgate serve`` in exactly the gap that
decision 0017-record-before-acknowledge closes, and watch the restart apply the tap once.

A hook that slows every tap has no business on a server LINE or Slack can
reach, so it is refused (a :class:`~tapgate.errors.ConfigError`, the server
does not start) unless the config describes a test set-up: a loopback
``server.host``, no ``server.public_url``, and a SQLite store. It is an
environment variable rather than a config key so that no production config
can carry it by copy and paste.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping

from tapgate.config import Config
from tapgate.errors import ConfigError

__all__ = ["APPLY_DELAY_VARIABLE", "apply_delay"]

log = logging.getLogger(__name__)

APPLY_DELAY_VARIABLE = "TAPGATE_TEST_APPLY_DELAY"
_MAX_DELAY = 60.0


def apply_delay(config: Config, environ: Mapping[str, str]) -> float:
    """The test hook's delay in seconds (0 when unset); ConfigError where it is refused."""
    text = environ.get(APPLY_DELAY_VARIABLE, "").strip()
    if not text:
        return 0.0
    try:
        delay = float(text)
    except ValueError:
        delay = -1.0
    if not 0 <= delay <= _MAX_DELAY:
        raise ConfigError(APPLY_DELAY_VARIABLE, f"expected seconds from 0 to {_MAX_DELAY:g}")
    server = config.server
    if not _loopback(server.host) or server.public_url is not None:
        raise ConfigError(
            APPLY_DELAY_VARIABLE,
            "a test-only hook: refused unless server.host is a loopback address "
            "and server.public_url is unset",
        )
    if not config.store.url.startswith("sqlite"):
        raise ConfigError(APPLY_DELAY_VARIABLE, "a test-only hook: refused with this store")
    log.warning("test hook: every tap is applied %gs after its 200 (%s)", delay, text)
    return delay


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
