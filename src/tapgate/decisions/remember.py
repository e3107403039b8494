"""What an approver may remember of a request, and what that would cover (decision
0013-every-answer-narrows).

A card offers "Allow for session" and "Always allow" only where they mean
something and the operator allows them, and says what each covers, so an
approver never grants more than they read. This module answers both
questions from the policy and the request alone:

- :func:`offer_for`: which remember buttons a card shows (a session button
  only when the call has a session; "always" unless a tool or rule says
  ``remember: [once, session]``; nothing for a question or for a call with
  hazards, which is never ``grantable``), the grant's lifetime and how many
  calls it allows (``always_uses``: single-use grants are spent by the first);
- :func:`covers`: the request's fingerprint in words ("deploy_web with
  env=staging"): exactly what a grant is keyed on, since a grant covers the
  request's own fingerprint (:func:`tapgate.gate.records.grant_for`);
- :func:`reach_for`: the same offer checked again when the tap arrives, so
  a stale or forged "Always" button cannot widen what the policy allows now.

The policy is evaluated again for the request's call rather than stored
with the request: a config reload that forbids "always" applies to cards
already sent, and the store needs no new columns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tapgate.errors import RequestNotFound
from tapgate.gate.models import CONTACT_TOOL, Request, Scope, ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.masking import clean
from tapgate.policy.rules import DEFAULT_ALWAYS_TTL

if TYPE_CHECKING:
    from tapgate.gate.doors import PolicyLookup

__all__ = ["Offer", "Reach", "covers", "offer_for", "reach", "reach_for"]

_VALUE_MAX = 60
_COVERS_MAX = 160


@dataclass(frozen=True, kw_only=True, slots=True)
class Offer:
    """The remember buttons a card shows for one request, and what they cover."""

    session: bool
    always: bool
    always_ttl: float
    covers: str
    always_uses: int | None = None
    """Calls the grant allows before it is spent (``1``: the card says "once")."""
    """The fingerprint in words: what a session or an always grant would let through."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Reach:
    """How far a tap's approval may reach: its scope and grant lifetime, or why it may not."""

    scope: Scope
    ttl: float | None = None
    uses: int | None = None
    refused: bool = False


def offer_for(policy: Policy, request: Request) -> Offer:
    """What a card for ``request`` may offer beyond "Approve" (see the module docstring)."""
    words = covers(request.tool, request.fingerprint)
    if request.tool == CONTACT_TOOL or not request.grantable:
        return Offer(session=False, always=False, always_ttl=DEFAULT_ALWAYS_TTL, covers=words)
    call = ToolCall(
        tool=request.tool,
        arguments=request.arguments,
        agent=request.agent,
        session=request.session,
        risk=request.risk,
    )
    verdict = policy.evaluate(call)
    remember = verdict.remember if verdict.grantable else frozenset[Scope]({"once"})
    return Offer(
        session="session" in remember and bool(request.session),
        always="always" in remember,
        always_ttl=verdict.always_ttl,
        covers=words,
        always_uses=verdict.always_uses,
    )


def reach_for(policy: Policy, request: Request | None, scope: Scope) -> Reach:
    """``scope`` as a tap asks for it, checked against what the card may offer now.

    ``None`` (no such request) is left to the decision itself, which says so.
    A session tap on a call without a session stays what it always was: an
    approval that counts once.
    """
    if scope == "once" or request is None:
        return Reach(scope=scope)
    offer = offer_for(policy, request)
    if scope == "always":
        return Reach(
            scope="always",
            ttl=offer.always_ttl,
            uses=offer.always_uses,
            refused=not offer.always,
        )
    refused = not offer.session and bool(request.session) and request.grantable
    return Reach(scope="session", refused=refused)


async def reach(gate: PolicyLookup, request_id: str, scope: Scope) -> Reach:
    """:func:`reach_for` on the request as the store has it now (``core.taps`` asks first)."""
    if scope == "once":
        return Reach(scope=scope)
    try:
        request: Request | None = await gate.get_request(request_id)
    except RequestNotFound:
        request = None  # the decision says so, and audits it
    return reach_for(gate.policy, request, scope)


def covers(tool: str, fingerprint: str) -> str:
    """A grant key in words, masked, made visible and clipped: "deploy_web with env=staging".

    Works for a request and for a grant alike (same tool, same fingerprint).
    The grant listings (Slack, LINE, the web inbox) show it as it is, so a
    bidi override in a keyed value is made visible here, not by each of them.
    """
    if fingerprint.startswith("shell:"):
        starts = " / ".join(repr(p) for p in fingerprint.removeprefix("shell:").split("\n") if p)
        text = f"{tool} running commands that start {starts}"
    elif fingerprint.startswith("args:"):
        text = f"{tool} with exactly these arguments"
    else:
        text = f"{tool} with {_named(fingerprint)}"
    text = clean(" ".join(text.split()))  # the grant listings show it as it comes from here
    return text if len(text) <= _COVERS_MAX else text[: _COVERS_MAX - 1] + "…"


def _named(fingerprint: str) -> str:
    """``env=staging, region=eu``: the named arguments a tool's ``fingerprint`` keys on."""
    try:
        values = json.loads(fingerprint)
    except ValueError:
        return "the same arguments"
    if not isinstance(values, dict) or not values:
        return "the same arguments"
    parts = []
    for name, value in values.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(shown) > _VALUE_MAX:
            shown = shown[: _VALUE_MAX - 1] + "…"
        parts.append(f"{name}={shown}")
    return ", ".join(parts)
