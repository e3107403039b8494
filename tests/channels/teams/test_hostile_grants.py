"""The Teams "grants" card with hostile text: shown as typed, masked, and always a valid card.

What a grant covers comes from the agent (its tool name, the keyed argument
values, its session), so the listing an approver reads before revoking is
hostile text like any card's. Every piece of it must be a TextRun (never
Markdown), with no secret and no invisible or bidi character left raw, each
Revoke button carrying its own grant, and the message within Teams' size.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.channels.teams.card_parts import MAX_BYTES
from tapgate.channels.teams.commands import LIST_MAX, _listing
from tapgate.decisions.buttons import parse_revoke_postback_data
from tapgate.decisions.chat_grants import Listed, Listing
from tapgate.decisions.chat_grants import _covers as own_grants_covers
from tapgate.decisions.texts import grant_line, grants_heading, revoked_message
from tapgate.gate.models import Grant
from tests.channels.teams.test_notifier import _texts

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
HOSTILE = st.lists(
    st.sampled_from(
        [
            *"*_~`#>[]()<>@!\\\n \t\u0000\u0007\u200b\u202e\u2066\U000e0041é😀",
            *("**APPROVED**", "[click](https://evil.example)", "<at>alice</at>", "${x}"),
            *(f"token={SECRET}", SECRET, "-----BEGIN RSA PRIVATE KEY-----"),
        ]
    ),
    max_size=60,
).map("".join)
RAW = ("\u0000", "\u0007", "\u200b", "\u202e", "\u2066", "\U000e0041")


def grant(n: int, tool: str, value: str, session: str) -> Grant:
    """A grant keyed on hostile values: a session grant for odd ``n``, an Always grant else."""
    fingerprint = json.dumps({"env": value, "api_token": SECRET, "note": value})
    return Grant(
        id=f"g{n}-{'x' * 30}",
        scope="session" if n % 2 else "always",
        agent="ci",
        session=session if n % 2 else None,
        tool=tool or "t",
        fingerprint=fingerprint,
        created_at=NOW,
        created_by="alice",
        expires_at=NOW if n % 3 else None,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=HOSTILE, value=HOSTILE, session=HOSTILE, many=st.integers(0, LIST_MAX))
def test_hostile_grants_are_listed_as_typed_masked_and_within_teams_limits(
    tool: str, value: str, session: str, many: int
) -> None:
    grants = [grant(n, tool, value, session) for n in range(many)]
    items = tuple(Listed(grant=g, line=grant_line(g, own_grants_covers(g))) for g in grants)
    listing = Listing(
        approver="alice", message=grants_heading(many, many + 3), items=items, total=many + 3
    )
    before = revoked_message(own_grants_covers(grant(1, tool, value, session)))
    for message in (_listing(listing), _listing(listing, before=before)):
        raw = json.dumps(message, ensure_ascii=False)
        assert len(raw.encode()) <= MAX_BYTES
        card = message["attachments"][0]["content"]
        shown = _texts(card)
        assert all(t["kind"] in ("TextRun", "action") for t in shown), shown  # never Markdown
        assert SECRET not in raw and "PRIVATE KEY-----\n" not in raw
        assert not any(c in t["text"] for t in shown for c in RAW), shown
        revokes = [
            parse_revoke_postback_data(a["data"]["tg"])
            for block in card["body"]
            if block["type"] == "ActionSet"
            for a in block["actions"]
        ]
        assert revokes == [g.id for g in grants]
