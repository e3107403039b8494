"""The one LINE call the webhook makes: a reply to a tap or a command, over one long-lived session.

Pushes go through line-bot-sdk (``tapgate.channels.line.notifier``), where retry
keys, error bodies and quota handling matter. A reply is simpler (one text,
a single-use token, nothing to retry) and sits on the tap's hot path, where
the SDK cost more than the rest of the tap: every call re-validates its
arguments and builds and parses pydantic-v1 models, and its aiohttp session
is created with ``trust_env=True``, which reads ``~/.netrc`` and the proxy
environment *per request* in a worker thread. Measured on the 2-core
benchmark machine, that was about a third of a tap's server CPU
(``benchmarks/bench_server.py``, docs/benchmarks.md).

So the reply is one POST of a fixed JSON shape through a session owned here.
The proxy environment (``HTTPS_PROXY`` / ``NO_PROXY``) is still honoured,
read once when the session is made instead of on every reply.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import aiohttp

__all__ = ["REPLY_PATH", "TEXT_LIMIT", "LineReplier", "ReplyFailed", "fit_text"]

REPLY_PATH = "/v2/bot/message/reply"
TEXT_LIMIT = 5000
"""LINE's limit for one text message, in UTF-16 code units (an emoji is two)."""


class ReplyFailed(Exception):
    """LINE answered a reply with an error status (e.g. an expired reply token)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status
        self.body = body


class LineReplier:
    """Sends text replies for one channel; create it inside the running loop."""

    def __init__(self, *, api_base_url: str, access_token: str, timeout: float) -> None:
        base = api_base_url.rstrip("/")
        self._url = base + REPLY_PATH
        self._proxy = _proxy_for(base)
        self._session = aiohttp.ClientSession(
            headers={
                "Authorization": f"Bearer {access_token}",
                "Content-Type": "application/json",
                "User-Agent": "tapgate",
            },
            timeout=aiohttp.ClientTimeout(total=timeout),
            trust_env=False,  # the environment was read once, in _proxy_for
            # LINE's API sets no cookies; filtering a jar on every request is pure cost.
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    async def reply(self, reply_token: str, text: str) -> None:
        """Reply with one text message; raises :class:`ReplyFailed` on an error status."""
        await self.reply_messages(reply_token, [{"type": "text", "text": fit_text(text)}])

    async def reply_messages(self, reply_token: str, messages: Sequence[Mapping[str, Any]]) -> None:
        """Reply with up to five message objects (a Flex listing); raises :class:`ReplyFailed`."""
        body = json.dumps(
            {"replyToken": reply_token, "messages": list(messages)}, ensure_ascii=False
        ).encode("utf-8")
        async with self._session.post(self._url, data=body, proxy=self._proxy) as response:
            if response.status >= 300:
                raise ReplyFailed(response.status, await response.text(errors="replace"))
            await response.read()

    async def close(self) -> None:
        await self._session.close()


def fit_text(text: str) -> str:
    """``text`` cut to :data:`TEXT_LIMIT` UTF-16 code units, the measure LINE refuses by.

    A cut in code points (``text[:5000]``) let a reply of emoji reach 10,000
    units, refused whole: the approver saw no answer to the tap. A cut that
    falls inside a surrogate pair drops that half, so the text stays a prefix.
    """
    if len(text) * 2 <= TEXT_LIMIT:  # fast path: even all-astral text fits
        return text
    return text.encode("utf-16-le")[: 2 * TEXT_LIMIT].decode("utf-16-le", "ignore")


def _proxy_for(base_url: str) -> str | None:
    """The proxy the environment names for ``base_url`` (``HTTPS_PROXY`` etc.), if any."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if not host or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(parts.scheme)
