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

The page also offers to sign its approver in to the web inbox
(:meth:`ReviewLinks.sign_in`): one ``POST`` with the nonce, once per link,
only while the link can still decide; never on a ``GET``.
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
from tapgate.decisions.sign_in import Opened, SignIns
from tapgate.decisions.tap_records import BatchTap, Tap, TapOutcome
from tapgate.decisions.taps import tap, tap_batch
from tapgate.store.review_links import NewLink, StoredLink

if TYPE_CHECKING:
    from tapgate.gate.gate import Gate

__all__ = [
    "LINK_EXPIRED",
    "LINK_MEMORY",
    "LINK_SIGNED_IN",
    "LINK_UNKNOWN",
    "LINK_USED",
    "NOT_AN_APPROVER",
    "Minted",
    "OpenLink",
    "ReviewLinks",
    "digest",
    "forget_ended",
]

_TOKEN_BYTES = 32  # 256 bits: guessing one is hopeless, and it fits a URL in 43 characters
LINK_USED = "This link was already used to answer. Each link answers once."
LINK_EXPIRED = "This link has expired with its request."
LINK_SIGNED_IN = "This link has already signed in to the web inbox once. Each link signs in once."
NOT_AN_APPROVER = "The approver this link was sent to is no longer configured here."
_DETAIL = {"via": "review_link"}
LINK_UNKNOWN = "This link is not valid (a link is forgotten a day after its request ends)."
LINK_MEMORY = timedelta(days=1)
"""How long an ended link is kept: its page says "expired" or "already used" for a
day (a mail opened late is told why), then :data:`LINK_UNKNOWN`, and the row is
gone. A request's outcome claim (one outcome mail per address) goes with the
last of its links, once it is as old."""


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

    async def sign_in(self, token: str, csrf: str, *, user_agent: str = "") -> Opened | str | None:
        """Sign the link's approver in to the web inbox, once; ``None``: an unknown link or nonce.

        A sentence instead when the link was used to decide, has expired or
        has signed in already: a link a mail scanner or a forwarded mail
        holds opens no session once its approver is done with it. The
        session is the approver's the link was sent to (never a form's
        field), through :class:`~tapgate.decisions.sign_in.SignIns` (its
        link and exchange audited as any sign-in, ``via`` this channel).
        """
        opened = await self._with_nonce(token, csrf)
        if opened is None:
            return None
        approver = opened.link.approver
        if self.gate.directory.get(approver) is None:
            return NOT_AN_APPROVER  # removed from the config since the mail went out
        marked = await self.gate.store.review_links.sign_in(digest(token), self.gate.clock.now())
        if marked != "used":
            return {"already_used": LINK_USED, "signed_in": LINK_SIGNED_IN}.get(
                marked, LINK_EXPIRED
            )
        sign_ins = SignIns(self.gate)
        single_use = await sign_ins.link(approver, via=self.channel)
        session = await sign_ins.exchange(single_use, user_agent=user_agent)
        return LINK_EXPIRED if session is None else session  # None: only if time ran back

    async def _with_nonce(self, token: str, csrf: str) -> OpenLink | None:
        """The link behind ``token`` when ``csrf`` is its nonce (compared in constant time)."""
        opened = await self.open(token)
        if opened is None or not hmac.compare_digest(
            opened.link.csrf.encode(), csrf.encode("utf-8", "surrogatepass")
        ):
            return None
        return opened


async def forget_ended(gate: Gate, *, after: timedelta = LINK_MEMORY) -> int:
    """Drop links that ended ``after`` ago and the outcome claims left; how many (heartbeat).

    Every channel's links; an outcome claim goes once as old and no kept
    link to its request (or batch) and address is left.
    """
    return await gate.store.review_links.forget(gate.clock.now() - after)


def _as_tap(action: str) -> TapAction:
    if action not in ("approve", "deny", "approve_session", "approve_always", "reply", "dismiss"):
        raise ValueError(f"not an answer to a request: {action!r}")
    return action  # type: ignore[return-value]  # checked against the Literal's values above


def _as_batch(action: str) -> BatchAction:
    if action not in ("approve_all", "deny_all", "approve_all_session"):
        raise ValueError(f"not an answer to a batch: {action!r}")
    return action  # type: ignore[return-value]  # checked against the Literal's values above
