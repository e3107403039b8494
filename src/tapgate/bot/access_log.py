"""The server's access log: one short line per request, formatted only if it is written.

aiohttp's default access logger formats a dozen fields (two of them a
strftime of the local time, which the log handler's own timestamp repeats)
for every request before the logging module decides anything; on the tap
path that was a few per cent of the server's CPU. This one hands the logging
module a format string and arguments, so a disabled ``aiohttp.access`` logger
costs one level check, and it logs the path without the query string, which
is never needed to read the log and may carry what should not be in it.

The path is logged as it came on the wire (percent-encoded): the decoded
``request.path`` would let anyone write ``%0D%0A`` and forge log lines.
"""

from __future__ import annotations

import logging

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

__all__ = ["AccessLogger"]


class AccessLogger(AbstractAccessLogger):
    """``<peer> "<METHOD> <path>" <status> <bytes>B <ms>ms`` at INFO on ``aiohttp.access``."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %d %dB %.1fms',
            request.remote,
            request.method,
            request.rel_url.raw_path,
            response.status,
            response.body_length,
            time * 1000,
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)
