"""Signing in to the web inbox from the chat (decision 0016-web-identity-from-the-chat): links and
sessions.

There are no passwords. A chat surface that has already verified a person
(a signed Slack command, a signed LINE message from their 1:1 chat) asks
:meth:`SignIns.link` for a link: a 256-bit random token, bound to that
approver, single-use and valid for :data:`LINK_TTL`. The browser exchanges
it (:meth:`SignIns.exchange`) for a session: a second random secret held in
an ``HttpOnly`` cookie, with its own CSRF token and an end
(:data:`SESSION_TTL`), listable and revocable by its approver. Only digests
of the secrets reach the store (:mod:`tapgate.store.web_sessions`).

A session names an approver; what that approver may decide is still checked
against each request inside the decision (:mod:`tapgate.decisions.taps`, channel
``web``), exactly as for a chat tap.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from tapgate.store.web_sessions import NewSession, WebSession

if TYPE_CHECKING:
    from tapgate.gate.doors import ApproverStore

__all__ = [
    "INBOX_PATH",
    "LINK_TTL",
    "SESSION_COOKIE",
    "SESSION_TTL",
    "Opened",
    "SignIns",
    "WebSession",
    "cookie_options",
    "csrf_matches",
    "same_secret",
]

LINK_TTL = timedelta(minutes=10)
"""How long a sign-in link works: long enough to open it, short enough to be worthless later."""

SESSION_TTL = timedelta(hours=12)
"""How long a session lasts: a working day; a new link from the chat after that."""

SESSION_COOKIE = "tapgate_session"
"""The cookie a session's secret travels in (``HttpOnly``, ``SameSite=Strict``, path ``/inbox``)."""

INBOX_PATH = "/inbox"
"""Where the web inbox lives, and the only path its session cookie is sent to."""

_USER_AGENT_MAX = 200


def cookie_options(public_url: str | None) -> dict[str, object]:
    """The session cookie's attributes; ``Secure`` behind an https public URL.

    One definition for every page that sets it: the web inbox's sign-in and
    a review page's "Open the web inbox" (``channels/email``).
    """
    secure = public_url is not None and public_url.startswith("https:")
    return {"httponly": True, "samesite": "Strict", "secure": secure, "path": INBOX_PATH}


@dataclass(frozen=True, kw_only=True, slots=True)
class Opened:
    """A session just opened: the record, and the cookie secret (shown once, never stored)."""

    session: WebSession
    secret: str

    @property
    def max_age(self) -> int:
        """The cookie's ``Max-Age``: the session's whole life, in seconds."""
        return int((self.session.expires_at - self.session.created_at).total_seconds())


def _bytes(text: str) -> bytes:
    """``text`` to hash or compare, whatever a client sent.

    aiohttp hands header and cookie bytes that are not UTF-8 over as lone
    surrogates, which a plain ``encode()`` refuses: a 500 from a cookie
    anyone can send. Passed through, they make bytes no issued secret has.
    """
    return text.encode("utf-8", "surrogatepass")


def _digest(secret: str) -> str:
    return hashlib.sha256(_bytes(secret)).hexdigest()


def same_secret(expected: str, offered: str) -> bool:
    """Whether ``offered`` is ``expected`` (constant-time, any text ``offered`` may hold)."""
    return hmac.compare_digest(_bytes(expected), _bytes(offered))


def csrf_matches(session: WebSession, offered: str | None) -> bool:
    """Whether ``offered`` is the session's CSRF token (constant-time)."""
    return offered is not None and same_secret(session.csrf, offered)


class SignIns:
    """Sign-in links and web sessions, through the gate's store."""

    def __init__(self, gate: ApproverStore) -> None:
        self._gate = gate

    async def link(self, approver: str, *, via: str) -> str:
        """A new single-use token for ``approver`` (who must be configured; ``ValueError``).

        ``via`` names the chat that vouched for them (``slack``, ``line``…).
        """
        if self._gate.directory.get(approver) is None:
            raise ValueError(f"{approver!r} is not an approver")
        token = secrets.token_urlsafe(32)
        now = self._gate.clock.now()
        await self._gate.store.web.add_link(
            _digest(token), approver=approver, via=via, now=now, expires_at=now + LINK_TTL
        )
        return token

    async def link_owner(self, token: str) -> str | None:
        """Whose unused, unexpired link ``token`` is (shown before the exchange); else ``None``."""
        return await self._gate.store.web.link_owner(_digest(token), self._gate.clock.now())

    async def exchange(self, token: str, *, user_agent: str = "") -> Opened | None:
        """Use ``token`` once and open a session; ``None`` for an unknown, used or expired one."""
        now = self._gate.clock.now()
        secret = secrets.token_urlsafe(32)
        new = NewSession(
            id=secrets.token_hex(8),
            secret_hash=_digest(secret),
            csrf=secrets.token_urlsafe(24),
            user_agent=user_agent[:_USER_AGENT_MAX],
            expires_at=now + SESSION_TTL,
        )
        session = await self._gate.store.web.exchange(_digest(token), new, now)
        return None if session is None else Opened(session=session, secret=secret)

    async def session(self, secret: str | None) -> WebSession | None:
        """The live session behind a cookie value, if any (one that is still an approver's)."""
        if not secret or len(secret) > 100:
            return None
        found = await self._gate.store.web.session(_digest(secret), self._gate.clock.now())
        if found is None or self._gate.directory.get(found.approver) is None:
            return None  # an approver removed from config loses their sessions at once
        return found

    async def sessions_of(self, approver: str) -> list[WebSession]:
        """``approver``'s live sessions, newest first."""
        return await self._gate.store.web.sessions_of(approver, self._gate.clock.now())

    async def revoke(self, session_id: str, *, approver: str) -> bool:
        """End one of ``approver``'s sessions (sign-out is revoking one's own)."""
        return await self._gate.store.web.revoke(
            session_id, approver=approver, now=self._gate.clock.now()
        )

    async def forget(self, before_days: float = 1.0) -> int:
        """Drop links and sessions that ended more than ``before_days`` ago (the heartbeat)."""
        before = self._gate.clock.now() - timedelta(days=before_days)
        return await self._gate.store.web.forget(before)
