"""Review links: a message's single-use link to a page that shows a request and decides it.

A channel that cannot carry buttons (email) sends a link instead. Mail
scanners, link previews and "Safe Links" fetch every link in a message before
the person reads it, so a link must never decide on a ``GET``: it opens a
page (:meth:`ReviewLinks.open`, which writes nothing), and only a ``POST`` of
that page's form, carrying the link's CSRF nonce, decides
(:meth:`ReviewLinks.decide`).

A link's token is 256 random bits, stored only as its SHA-256
(:mod:`tapgate.store.review_links`), bound to one request or batch and to the
approver and address it was sent to, and it ends with the request. Deciding
uses it once (a compare-and-set) and then goes through the one decision path
every chat tap takes (:func:`tapgate.decisions.taps.tap`): the approver is
checked against *this* request inside the decision's compare-and-set, the
decision happens once, refusals are audited and answered in
:mod:`tapgate.decisions.texts`' words ("already decided by ..."). The tapper
is the address the link was sent to, never anything from the form.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from tapgate.decisions.buttons import BatchAction, TapAction
from tapgate.decisions.edits import EditCheck, approve_edit, prepare
from tapgate.decisions.tap_records import BatchTap, Tap, TapOutcome
from tapgate.decisions.taps import tap, tap_batch
from tapgate.store.review_links import NewLink, StoredLink

if TYPE_CHECKING:
    from tapgate.gate.gate import Gate

__all__ = [
    "LINK_EXPIRED",
    "LINK_MEMORY",
    "LINK_USED",
    "Minted",
    "OpenLink",
    "ReviewLinks",
    "digest",
    "forget_ended",
]

_TOKEN_BYTES = 32  # 256 bits: guessing one is hopeless, and it fits a URL in 43 characters
LINK_USED = "This link was already used to answer. Each link answers once."
LINK_EXPIRED = "This link has expired with its request."
_DETAIL = {"via": "review_link"}
LINK_MEMORY = timedelta(days=1)
"""How long an ended link is kept: its page says "expired" or "already used" for a
day (a mail opened late is told why), then "not valid", and the row is gone."""


def digest(token: str) -> str:
    """The SHA-256 a link is stored as (any text a client sends hashes without error)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class Minted:
    """A link just made: the token (shown once, in the message) and its thread position."""

    token: str
    first: bool
    """No earlier message of this request (or batch) went to this address."""


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenLink:
    """A link as a page sees it: the stored record, and whether it can still decide."""

    link: StoredLink
    state: Literal["open", "used", "expired"]


class ReviewLinks:
    """Mints, opens and uses review links, for one channel (``channel`` names its taps)."""

    def __init__(self, gate: Gate, *, channel: str) -> None:
        self.gate = gate
        self.channel = channel

    async def mint(
        self,
        subject: str,
        *,
        batch: bool,
        approver: str,
        address: str,
        key: str,
        expires_at: datetime,
    ) -> Minted:
        """A new link to ``subject`` (a request id, or a batch id) for ``address``.

        ``key`` is the outbox row's retry key: a retried send mints a new
        link (the old token cannot be read back) and stays the first message.
        """
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        link = NewLink(
            token_hash=digest(token),
            subject=subject,
            batch=batch,
            approver=approver,
            address=address,
            csrf=secrets.token_urlsafe(16),
            outbox_key=key,
            expires_at=expires_at,
        )
        first = await self.gate.store.review_links.add(link, self.gate.clock.now())
        return Minted(token=token, first=first)

    async def claim_outcome(self, subject: str, address: str) -> bool:
        """Claim the one outcome message of ``subject`` to ``address``; ``False`` if sent."""
        return await self.gate.store.review_links.claim_outcome(
            subject, address, self.gate.clock.now()
        )

    async def release_outcome(self, subject: str, address: str) -> None:
        """Give the claim back: the message could not be sent, a later update tries again."""
        await self.gate.store.review_links.release_outcome(subject, address)

    async def open(self, token: str) -> OpenLink | None:
        """The link behind ``token`` and whether it can decide; ``None`` if there is none.

        Writes nothing, whatever the link's state: this runs for every
        ``GET`` and ``HEAD`` a scanner makes.
        """
        found = await self.gate.store.review_links.find(digest(token))
        if found is None:
            return None
        if found.used_at is not None:
            return OpenLink(link=found, state="used")
        if found.expires_at <= self.gate.clock.now():
            return OpenLink(link=found, state="expired")
        return OpenLink(link=found, state="open")

    async def decide(
        self,
        token: str,
        csrf: str,
        action: str,
        *,
        reason: str | None = None,
        edited: Mapping[str, Any] | None = None,
    ) -> TapOutcome | None:
        """Use the link once and decide as its approver; ``None`` for an unknown link or nonce.

        ``action`` is a :data:`~tapgate.decisions.buttons.TapAction` for a
        request's link, a :data:`~tapgate.decisions.buttons.BatchAction` for
        a batch's (the caller checks which). ``edited`` approves those
        arguments instead (:func:`~tapgate.decisions.edits.approve_edit`,
        judged again inside the one decision path).
        """
        opened = await self._with_nonce(token, csrf)
        if opened is None:
            return None
        link = opened.link
        answer: Tap | BatchTap  # built first: a bad action must not use the link up
        if link.batch:
            answer = BatchTap(
                channel=self.channel,
                user_id=link.address,
                action=_as_batch(action),
                batch_id=link.subject,
            )
        else:
            answer = Tap(
                channel=self.channel,
                user_id=link.address,
                action=_as_tap(action),
                request_id=link.subject,
            )
        used = await self.gate.store.review_links.use(digest(token), self.gate.clock.now())
        if used != "used":
            message = LINK_USED if used == "already_used" else LINK_EXPIRED
            kind: Literal["already", "expired"] = "already" if used == "already_used" else "expired"
            return TapOutcome(kind=kind, approver=link.approver, message=message)
        if isinstance(answer, BatchTap):
            return await tap_batch(self.gate, answer, reason=reason)
        if edited is not None:
            return await approve_edit(self.gate, answer, edited)
        return await tap(self.gate, answer, reason=reason, detail=_DETAIL)

    async def check_edit(
        self, token: str, csrf: str, texts: Mapping[str, str | None]
    ) -> EditCheck | None:
        """Judge an edit typed on a request link's page; decides nothing, uses nothing up.

        ``None`` for an unknown link, a wrong nonce, or a batch's link (a
        batch is answered whole). Otherwise :func:`~tapgate.decisions.edits.prepare`
        for the link's approver: the form read, the policy's second look,
        a refusal audited. Deciding is :meth:`decide` with ``edited``.
        """
        opened = await self._with_nonce(token, csrf)
        if opened is None or opened.link.batch:
            return None
        link = opened.link
        answer = Tap(
            channel=self.channel, user_id=link.address, action="approve", request_id=link.subject
        )
        return await prepare(self.gate, answer, texts)

    async def _with_nonce(self, token: str, csrf: str) -> OpenLink | None:
        """The link behind ``token`` when ``csrf`` is its nonce (compared in constant time)."""
        opened = await self.open(token)
        if opened is None or not hmac.compare_digest(
            opened.link.csrf.encode(), csrf.encode("utf-8", "surrogatepass")
        ):
            return None
        return opened


async def forget_ended(gate: Gate, *, after: timedelta = LINK_MEMORY) -> int:
    """Drop the links (every channel's) that ended more than ``after`` ago; how many (heartbeat)."""
    return await gate.store.review_links.forget(gate.clock.now() - after)


def _as_tap(action: str) -> TapAction:
    if action not in ("approve", "deny", "approve_session", "approve_always", "reply", "dismiss"):
        raise ValueError(f"not an answer to a request: {action!r}")
    return action  # type: ignore[return-value]  # checked against the Literal's values above


def _as_batch(action: str) -> BatchAction:
    if action not in ("approve_all", "deny_all", "approve_all_session"):
        raise ValueError(f"not an answer to a batch: {action!r}")
    return action  # type: ignore[return-value]  # checked against the Literal's values above
