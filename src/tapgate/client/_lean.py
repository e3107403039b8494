"""The hook's gate: the plans of :mod:`tapgate.client._plans` driven over a plain socket.

``tapgate hook claude-code`` starts a Python process for every Claude Code
tool call, so its start-up is the gate's cost to the user. httpx pulls in
asyncio, ``urllib.request`` and ``email`` and loads a CA bundle even for an
``http://`` URL (together ~150 ms against ~10 ms for the request itself), and
``http.client`` still imports ``email`` and ``ssl`` (~15 ms), so this driver
makes its one HTTP/1.1 exchange itself (:mod:`tapgate.client._http1`), and
for ``https://`` uses the system's trust store through
``ssl.create_default_context()`` (certificates and host names verified, as
httpx does), built only then. What to send, how to read the answers, retries,
Retry-After and long-poll slices stay in the shared plans, so this gate and
:class:`~tapgate.client.SyncRemoteGate` cannot disagree.

Each request has a connection of its own: a call allowed by policy makes one
request, and a fresh connection can never be a stale keep-alive one that the
server closed, which would make a submit fail after it may have been sent.
httpx honours proxy variables (``HTTPS_PROXY``...) and this driver does not:
:func:`connect` hands those environments to ``SyncRemoteGate``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from tapgate.client._plans import (
    LONG_POLL,
    Plan,
    Planner,
    Send,
    SyncCalls,
    T,
    TransportFailure,
    drive,
)
from tapgate.client._retrying import DEFAULT_RETRY_FOR
from tapgate.client._wire import without_credentials

if TYPE_CHECKING:
    from tapgate.client._remote import SyncRemoteGate

__all__ = ["LeanGate", "connect"]

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_SUBMIT = ("POST", "/v1/tool-calls")


def connect(
    url: str,
    token: str,
    *,
    retries: int = 3,
    retry_for: float = DEFAULT_RETRY_FOR,
    submitted: tuple[bytes, tuple[str, str] | None] | None = None,
) -> LeanGate | SyncRemoteGate:
    """The gate for the agent-side commands: :class:`LeanGate`, or httpx's when a proxy is set.

    ``submitted``: what the hook's fast path got for the submit it already
    sent (it sends nothing when a proxy is set, so this is a ``LeanGate``'s).
    """
    if submitted is not None:
        return LeanGate(url, token, retries=retries, retry_for=retry_for, submitted=submitted)
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES):
        from tapgate.client._remote import SyncRemoteGate

        return SyncRemoteGate(url, token, retries=retries, retry_for=retry_for)
    return LeanGate(url, token, retries=retries, retry_for=retry_for)


@dataclass(frozen=True, slots=True)
class _Headers(Mapping[str, str]):
    """Response headers looked up case-insensitively, as a ``Reply``'s must be."""

    by_name: dict[str, str]

    def __getitem__(self, name: str) -> str:
        return self.by_name[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __len__(self) -> int:
        return len(self.by_name)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Reply:
    """A response read to its end: what the plans read of it."""

    status_code: int
    reason_phrase: str
    headers: _Headers
    content: bytes


class LeanGate(SyncCalls):
    """A sync gate over a plain socket: the calls of :class:`~tapgate.client.SyncRemoteGate`.

    Same constructor, same plans, so the same retries, timeouts and errors;
    transport failures carry httpx's names (``ConnectError``...). Credentials
    in the URL are never sent (the agent token is the only credential) and
    never shown (``repr``, reasons).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        long_poll: float = LONG_POLL,
        sleep: Callable[[float], object] = time.sleep,
        retry_for: float = DEFAULT_RETRY_FOR,
        submitted: tuple[bytes, tuple[str, str] | None] | None = None,
    ) -> None:
        self.base_url = base_url
        self._sleep = sleep
        self._submitted = submitted  # the fast path's submit and its answer, read once
        self._planner = Planner(
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            long_poll=long_poll,
            retry_for=retry_for,
        )
        self._headers = {
            "Authorization": f"Bearer {token}",
            "User-Agent": "tapgate-client",
            "Accept": "*/*",
        }
        parts = urlsplit(base_url)
        self._scheme = parts.scheme.lower()
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")

    def __repr__(self) -> str:
        return f"LeanGate({without_credentials(self.base_url)!r})"  # never the token

    def close(self) -> None:
        """Nothing to release: every request closes its own connection."""

    def _run(self, plan: Plan[T]) -> T:
        return drive(plan, self._send, self._sleep)

    def _send(self, step: Send) -> _Reply:
        from tapgate.client._http1 import exchange, replayed  # here: a bad input needs neither

        if self._scheme not in ("http", "https"):
            scheme = self._scheme or "none"
            problem = f"Request URL has an unsupported protocol '{scheme}://'."
            raise TransportFailure("UnsupportedProtocol", problem, never_sent=True)
        target = self._prefix + step.path
        if step.params:
            target += "?" + urlencode(step.params)
        headers = dict(self._headers)
        body = None
        if step.json is not None:
            # httpx's encoding, so both gates send the same bytes.
            text = json.dumps(step.json, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            body = text.encode()
            headers["Content-Type"] = "application/json"
        if self._submitted is not None and (step.method, step.path) == _SUBMIT:
            received, failure = self._submitted
            self._submitted = None  # sent once by the fast path: its answer, not a second send
            response = replayed(received, failure)
        else:
            response = exchange(
                self._scheme,
                self._host,
                self._port,
                (step.method, target, headers, body),
                timeout=step.timeout,
                read_timeout=step.read_timeout,
            )
        by_name: dict[str, str] = {}
        for name, value in response.headers:
            key = name.lower()
            by_name[key] = f"{by_name[key]}, {value}" if key in by_name else value
        return _Reply(
            status_code=response.status,
            reason_phrase=response.reason,
            headers=_Headers(by_name),
            content=response.content,
        )
