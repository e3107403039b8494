"""The server's access log: one short line per request, or per refused request, or none.

``server.access_log`` picks which (:func:`access_log_options`): ``all``, ``errors``
(answers of status 400 and up: refusals, failures; the default) or ``off``.
At agents' call rates a line per allowed call was about 14% of the server's
CPU, and it repeats what the metrics count and the audit log keeps; a
refusal (a bad token, a malformed body, a probe for paths) is the news.

aiohttp's default access logger formats a dozen fields (two of them a
strftime of the local time, which the log handler's own timestamp repeats)
for every request before the logging module decides anything. This one hands
the logging module a format string and arguments, so a disabled
``aiohttp.access`` logger costs one level check per connection; and it builds
the record itself (``makeRecord`` + ``handle``: the logger's handlers and
filters all apply) rather than through ``Logger.info``, which walks the stack
to find the caller, a file and line inside aiohttp that nobody reads: a fifth
of the cost of a line. It logs the path without the query string, which is
never needed to read the log and may carry what should not be in it.

The path is logged as it came on the wire (percent-encoded): the decoded
``request.path`` would let anyone write ``%0D%0A`` and forge log lines.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

__all__ = ["AccessLogger", "ErrorAccessLogger", "access_log_options"]

_FORMAT = '%s "%s %s" %d %dB %.1fms'


class AccessLogger(AbstractAccessLogger):
    """``<peer> "<METHOD> <path>" <status> <bytes>B <ms>ms`` at INFO on ``aiohttp.access``."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        args = (
            request.remote,
            request.method,
            request.rel_url.raw_path,
            response.status,
            response.body_length,
            time * 1000,
        )
        logger = self.logger
        logger.handle(logger.makeRecord(logger.name, logging.INFO, "", 0, _FORMAT, args, None))

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


class ErrorAccessLogger(AccessLogger):
    """:class:`AccessLogger` for answers of status 400 and up only (``access_log: errors``)."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        if response.status >= 400:
            super().log(request, response, time)


def access_log_options(setting: str) -> dict[str, Any]:
    """``web.run_app`` keywords for ``server.access_log`` (``off``: no access logger at all)."""
    if setting == "off":
        return {"access_log": None}
    return {"access_log_class": AccessLogger if setting == "all" else ErrorAccessLogger}
