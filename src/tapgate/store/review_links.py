"""Review links in the store (migration 0012): digests, what each is for, used once, forgotten.

A mailed request carries a link to a review page. The link's token is kept
only as its SHA-256 (a database read hands out no working link), bound to
the request or batch it shows and to the approver and address it was sent
to. Reading a link (:meth:`ReviewLinks.find`) writes nothing: a review page
is fetched by mail scanners and link previews, and a ``GET`` must never
change anything, the audit log included. Deciding uses it by ONE
compare-and-set (:meth:`ReviewLinks.use`: ``used_at IS NULL AND expires_at >
now``), so two posts of one link cannot both decide. The heartbeat drops
ended links and their outcome claims (:meth:`ReviewLinks.forget`). What a
link *means* is :mod:`tapgate.decisions.review_links`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import Column, Connection, RowMapping, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from tapgate.store import engine as _engine
from tapgate.store.schema import review_links, review_outcomes

__all__ = ["NewLink", "ReviewLinks", "StoredLink", "UseOutcome"]

UseOutcome = Literal["used", "already_used", "signed_in", "expired", "unknown"]
"""What one attempt to use a link (to decide, or to sign in) found.

``signed_in``: the link already signed in (only an attempt to sign in is told so).
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class NewLink:
    """A link about to be sent (the token already hashed by the caller)."""

    token_hash: str
    subject: str
    batch: bool
    approver: str
    address: str
    csrf: str
    outbox_key: str
    expires_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredLink:
    """A link as stored: what it shows, whose it is, its nonce, its end, whether it was used."""

    subject: str
    batch: bool
    approver: str
    address: str
    csrf: str
    expires_at: datetime
    used_at: datetime | None
    signed_in_at: datetime | None = None


class ReviewLinks:
    """The ``review_links`` and ``review_outcomes`` tables."""

    def __init__(self, runner: _engine.Runner) -> None:
        self.runner = runner

    async def add(self, link: NewLink, now: datetime) -> bool:
        """Store ``link``; whether it is the first message of its thread for that address.

        Earlier links minted for the same outbox row (a retried send) do not
        count: the retry is still the thread's first message.
        """
        row = {
            "token_hash": link.token_hash,
            "subject": link.subject,
            "batch": link.batch,
            "approver": link.approver,
            "address": link.address,
            "csrf": link.csrf,
            "outbox_key": link.outbox_key,
            "created_at": now,
            "expires_at": link.expires_at,
        }
        earlier = select(review_links.c.token_hash).where(
            review_links.c.subject == link.subject,
            review_links.c.address == link.address,
            review_links.c.outbox_key != link.outbox_key,
        )

        def run(conn: Connection) -> bool:
            first = conn.execute(earlier.limit(1)).first() is None
            conn.execute(insert(review_links).values(**row))
            return first

        return await self.runner.run(run)

    async def find(self, token_hash: str) -> StoredLink | None:
        """The link behind ``token_hash``, used or not, or ``None``; writes nothing."""
        query = select(review_links).where(review_links.c.token_hash == token_hash)

        def run(conn: Connection) -> StoredLink | None:
            row = conn.execute(query).mappings().first()
            return None if row is None else _link(row)

        return await self.runner.read(run)

    async def use(self, token_hash: str, now: datetime) -> UseOutcome:
        """Mark the link used to decide, once (compare-and-set); what was found otherwise."""
        return await self._mark(token_hash, now, review_links.c.used_at)

    async def sign_in(self, token_hash: str, now: datetime) -> UseOutcome:
        """Mark the link as having signed in, once, while it can still decide."""
        return await self._mark(token_hash, now, review_links.c.signed_in_at)

    async def _mark(self, token_hash: str, now: datetime, column: Column[datetime]) -> UseOutcome:
        """Set ``column`` of an unused, unexpired link whose ``column`` is unset (one CAS)."""
        links = review_links.c
        mark = (
            update(review_links)
            .where(
                links.token_hash == token_hash,
                links.used_at.is_(None),
                column.is_(None),
                links.expires_at > now,
            )
            .values({column.name: now})
        )
        query = select(links.used_at, column).where(links.token_hash == token_hash)

        def run(conn: Connection) -> UseOutcome:
            if conn.execute(mark).rowcount == 1:
                return "used"
            row = conn.execute(query).first()
            if row is None:
                return "unknown"
            if row[0] is not None:
                return "already_used"
            return "signed_in" if row[1] is not None else "expired"

        return await self.runner.run(run)

    async def claim_outcome(self, subject: str, address: str, now: datetime) -> bool:
        """Claim the one outcome message of ``subject`` to ``address``; ``False`` if taken."""
        statement = insert(review_outcomes).values(subject=subject, address=address, sent_at=now)
        try:
            await self.runner.run(lambda conn: conn.execute(statement))
        except IntegrityError:  # another update (a reminder's message, a replica) has it
            return False
        return True

    async def release_outcome(self, subject: str, address: str) -> None:
        """Give a claim back (the message could not be sent: a later update sends it)."""
        statement = delete(review_outcomes).where(
            review_outcomes.c.subject == subject, review_outcomes.c.address == address
        )
        await self.runner.run(lambda conn: conn.execute(statement))

    async def forget(self, before: datetime) -> int:
        """Drop links that ended before ``before``, and outcome claims left behind; how many rows.

        An outcome claim (a ``review_outcomes`` row) goes once it was sent
        before ``before`` AND no link to the same request (or batch) and
        address is left: while a link is kept its page may still be opened,
        and a late update must still find the outcome told, not tell it again.
        """
        links = delete(review_links).where(review_links.c.expires_at < before)
        linked = (
            select(review_links.c.token_hash)
            .where(
                review_links.c.subject == review_outcomes.c.subject,
                review_links.c.address == review_outcomes.c.address,
            )
            .exists()
        )
        outcomes = delete(review_outcomes).where(review_outcomes.c.sent_at < before, ~linked)

        def run(conn: Connection) -> int:
            return int(conn.execute(links).rowcount + conn.execute(outcomes).rowcount)

        return await self.runner.run(run)


def _link(row: RowMapping) -> StoredLink:
    return StoredLink(
        subject=str(row["subject"]),
        batch=bool(row["batch"]),
        approver=str(row["approver"]),
        address=str(row["address"]),
        csrf=str(row["csrf"]),
        expires_at=row["expires_at"],
        used_at=row["used_at"],
        signed_in_at=row["signed_in_at"],
    )
