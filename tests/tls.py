"""One default TLS context per test process for line-bot-sdk's API clients.

line-bot-sdk builds a fresh ``ssl.create_default_context()`` for every
``AsyncApiClient`` (``linebot.v3.messaging.async_rest.RESTClientObject``),
and loading the system's trusted certificates into it costs ~15 ms of CPU. A
server makes one LINE client for its lifetime, so that is nothing in
production; the tests boot a LINE-enabled app per test, ~230 times in the
inner loop (about 3.5 s of its wall time, measured). The SDK takes no
context from outside, so :func:`share_line_sdk_tls_context` hands its module
a stand-in ``ssl`` whose ``create_default_context`` returns one context built
once, for the only call tapgate makes it do (no CA file). The SDK changes a
context only when a client certificate or ``verify_ssl=False`` is
configured, which tapgate never does; any other call builds a fresh one as
before. The LINE fakes speak plain HTTP on loopback, so no test depends on
the context's contents, and the context itself is the standard one.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

__all__ = ["share_line_sdk_tls_context"]


@functools.cache
def _default_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class _SharedDefaultSsl:
    """The ``ssl`` module, except that the plain default context is built once."""

    def __getattr__(self, name: str) -> Any:
        return getattr(ssl, name)

    @staticmethod
    def create_default_context(
        purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH, **paths: Any
    ) -> ssl.SSLContext:
        if purpose is ssl.Purpose.SERVER_AUTH and not any(paths.values()):
            return _default_context()
        return ssl.create_default_context(purpose, **paths)


def share_line_sdk_tls_context() -> None:
    """Point line-bot-sdk's REST client module at :class:`_SharedDefaultSsl` (this process)."""
    from linebot.v3.messaging import async_rest

    async_rest.ssl = _SharedDefaultSsl()
