"""An approver's own grants, from the chat: list them, revoke one (decision 0007-remember-scopes).

"Always allow" is only safe if it is visible and revocable by the person who
gave it, where they gave it. Slack's ``/tapgate grants`` and LINE's typed
``grants`` list the grants the asking approver made (what each covers, until
when) with a Revoke button each; the button lands here. The surfaces verify
the platform's signature and parse; who is asking and whether they may is
decided here, for every channel:

- **identify**: the platform ids must name a configured approver
  (:meth:`~tapgate.gate.directory.Directory.identify`, the same as a tap);
  a stranger lists nothing and revokes nothing, and the refused revoke is
  audited as ``channel:user_id``;
- **authorise**: only the approver who made a grant revokes it from the chat.
  Another approver is refused (audited), however senior: the chat identifies
  a person, not a role, so the one wider power stays with the operator's
  ``tapgate grants revoke`` (which needs access to the database);
- **exactly once**: the revoke, the event id that carried it and its audit
  line are one transaction (:mod:`tapgate.store.owned_grants`).

Session grants ("Allow for session") are listed too, naming their session:
they are as much the approver's standing answer as an Always grant.

The sentences are :mod:`tapgate.decisions.texts`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tapgate.decisions.remember import covers
from tapgate.decisions.texts import (
    GRANT_GONE,
    NO_GRANTS,
    NOT_GRANT_OWNER,
    NOT_KNOWN,
    grant_line,
    grants_heading,
    revoked_message,
)
from tapgate.gate.doors import ApproverStore
from tapgate.gate.models import Grant
from tapgate.policy.masking import clean

__all__ = ["Asker", "Listed", "Listing", "Revoked", "list_own", "revoke_own"]

_SESSION_MAX = 40


@dataclass(frozen=True, kw_only=True, slots=True)
class Asker:
    """Who asks, as the platform named them after its signature check (not trusted yet).

    ``team`` is the Slack workspace (``None`` elsewhere).
    """

    channel: str
    user_id: str
    team: str | None = None

    @property
    def stranger(self) -> str:
        """How the audit names someone tapgate does not know."""
        return f"{self.channel}:{self.user_id}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Listed:
    """One listed grant: the record (its id goes on the Revoke button) and its line."""

    grant: Grant
    line: str
    """ "deploy_web with env=staging for ci, until 2026-12-24 12:03 UTC" (masked, clipped)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Listing:
    """What an approver is shown for "grants": a heading (or why not), the grants, how many more."""

    approver: str | None
    message: str
    items: tuple[Listed, ...] = ()
    total: int = 0

    @property
    def more(self) -> int:
        """Active grants not shown (beyond the surface's cap)."""
        return self.total - len(self.items)


@dataclass(frozen=True, kw_only=True, slots=True)
class Revoked:
    """What a Revoke tap did, and the sentence for the person who tapped."""

    kind: Literal["revoked", "gone", "not_owner", "not_approver", "duplicate"]
    message: str
    approver: str | None = None


async def list_own(gate: ApproverStore, asker: Asker, *, limit: int) -> Listing:
    """``asker``'s active grants, newest first, at most ``limit`` of them (a surface's cap)."""
    approver = gate.directory.identify(asker.channel, asker.user_id, asker.team)
    if approver is None:
        return Listing(approver=None, message=NOT_KNOWN)
    found, total = await gate.store.owned_grants.mine(
        approver, now=gate.clock.now(), limit=max(1, limit)
    )
    if not found:
        return Listing(approver=approver, message=NO_GRANTS)
    items = tuple(Listed(grant=grant, line=grant_line(grant, _covers(grant))) for grant in found)
    heading = grants_heading(len(items), total)
    return Listing(approver=approver, message=heading, items=items, total=total)


async def revoke_own(
    gate: ApproverStore,
    asker: Asker,
    grant_id: str,
    *,
    event: str | None = None,
    refuse: str | None = None,
) -> Revoked:
    """Revoke ``grant_id`` if ``asker`` made it; refused (and audited) otherwise.

    ``event`` is the platform's event id: a redelivery is a ``duplicate``
    with nothing done and nothing to say. ``refuse`` is a reason only the
    surface can see (a tap from another Slack workspace): refused and audited.
    """
    approver = gate.directory.identify(asker.channel, asker.user_id, asker.team)
    done = await gate.store.owned_grants.revoke(
        grant_id,
        approver=approver,
        actor=approver or asker.stranger,
        now=gate.clock.now(),
        event=(asker.channel, event) if event is not None else None,
        detail=_detail(asker),
        refuse=refuse,
    )
    if done.kind == "revoked":
        assert done.grant is not None  # a revoke always hands back the grant it revoked
        message = revoked_message(_covers(done.grant))
    else:
        message = {
            "gone": GRANT_GONE,
            "not_owner": NOT_GRANT_OWNER,
            "not_approver": NOT_KNOWN,
            "duplicate": "",
        }[done.kind]
    return Revoked(kind=done.kind, message=message, approver=approver)


def _covers(grant: Grant) -> str:
    """What ``grant`` lets through, in words; a session grant names its session (agent text)."""
    words = covers(grant.tool, grant.fingerprint)
    if grant.scope != "session" or not grant.session:
        return words
    session = clean(" ".join(grant.session.split()))
    if len(session) > _SESSION_MAX:
        session = session[: _SESSION_MAX - 1] + "…"
    return f"{words} in session {session}"


def _detail(asker: Asker) -> dict[str, str]:
    """Where a revoke came from, as the audit records it."""
    detail = {"channel": asker.channel, "user_id": asker.user_id}
    if asker.team is not None:
        detail["team"] = asker.team
    return detail
