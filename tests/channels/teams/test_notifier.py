"""TeamsNotifier against the fake Entra token endpoint and Bot Connector: retries, limits, text.

The conversation references come from a real store (SQLite and PostgreSQL); no test waits
for a backoff (the retry policy's sleep is a recorder).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tapgate.channels.teams.card_parts import MAX_BYTES
from tapgate.channels.teams.notifier import TeamsNotifier
from tapgate.delivery.retry import RetryPolicy
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tapgate.store import Store
from tests.channels.teams.served import address
from tests.factories import make_request
from tests.fakes import Fault
from tests.fakes.sleeps import Sleeps
from tests.fakes.teams import APP_ID, APP_PASSWORD, FakeTeams

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
ALICE = Delivery(approver="alice", channel="teams", address=address(1))
NOBODY = Delivery(approver="carol", channel="teams", address=address(3))


@pytest.fixture
async def teams() -> AsyncIterator[FakeTeams]:
    async with FakeTeams() as fake:
        yield fake


@pytest.fixture
async def store(store: Store, teams: FakeTeams) -> Store:
    """The shared store (SQLite and PostgreSQL) holding alice's conversation."""
    reference = {
        "service_url": teams.service_url,
        "conversation_id": teams.conversation_of(1),
        "tenant_id": "t",
    }
    await store.conversations.put("teams", address(1), reference, NOW)
    return store


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def notifier(teams: FakeTeams, store: Store, sleeps: Sleeps) -> AsyncIterator[TeamsNotifier]:
    n = TeamsNotifier(
        app_id=APP_ID,
        app_password=APP_PASSWORD,
        token_url=teams.token_url,
        conversations=store.conversations,
        timeout=2.0,
        retry=RetryPolicy(jitter=0.0),
        sleep=sleeps,
    )
    yield n
    await n.close()


def request_(**fields: Any) -> Request:
    return make_request(NOW, tool="deploy", **fields)


async def test_cards_go_to_the_stored_conversation_with_one_token(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    first = await notifier.send(request_(), ALICE, key="k1")
    await notifier.send(request_(), ALICE, key="k2")
    assert len(teams.cards_in(1)) == 2
    assert len(teams.requests_to("token")) == 1  # cached until it nears expiry
    assert first.ref["activity_id"] in teams.activities
    assert first.ref["service_url"] == teams.service_url


@pytest.mark.parametrize("status", [429, 412, 502, 504])
async def test_throttling_and_gateway_errors_are_retried(
    teams: FakeTeams, notifier: TeamsNotifier, sleeps: Sleeps, status: int
) -> None:
    teams.script("send", Fault.status(status, headers={"Retry-After": "3"}))
    await notifier.send(request_(), ALICE, key="k")
    assert len(teams.cards_in(1)) == 1
    assert sleeps.delays == [3.0]


async def test_a_403_is_permanent_and_says_to_install_the_app(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    teams.script("send", Fault.status(403))
    with pytest.raises(PermanentDeliveryError, match="install the tapgate app"):
        await notifier.send(request_(), ALICE, key="k")


async def test_no_conversation_yet_is_permanent_and_names_the_approver(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    with pytest.raises(PermanentDeliveryError, match="carol has no Teams conversation"):
        await notifier.send(request_(), NOBODY, key="k")
    assert teams.requests_to("send") == []


async def test_a_refused_bot_token_is_renewed_once(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    await notifier.send(request_(), ALICE, key="k1")
    teams.tokens.clear()  # Entra revoked it
    await notifier.send(request_(), ALICE, key="k2")
    assert len(teams.requests_to("token")) == 2 and len(teams.cards_in(1)) == 2


async def test_a_wrong_secret_is_permanent(teams: FakeTeams, store: Store) -> None:
    n = TeamsNotifier(
        app_id=APP_ID,
        app_password="wrong",
        token_url=teams.token_url,
        conversations=store.conversations,
    )
    with pytest.raises(PermanentDeliveryError, match="401"):
        await n.send(request_(), ALICE, key="k")
    await n.close()


async def test_transient_failures_outlasting_the_policy_are_retryable(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    teams.script("send", *[Fault.status(502)] * 4)
    with pytest.raises(DeliveryError) as raised:
        await notifier.send(request_(), ALICE, key="k")
    assert raised.value.retryable


async def test_update_redraws_the_card_without_buttons(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    pending = request_()
    receipt = await notifier.send(pending, ALICE, key="k")
    decided = dataclasses.replace(pending, status="approved", resolved_by="bob", resolved_at=NOW)
    await notifier.update(decided, receipt)
    [posted] = teams.cards_in(1)
    assert "Approved by bob" in posted.text and "actions" not in posted.card


HOSTILE = "**APPROVED** [click](https://evil.example) <at>alice</at> ${secret} _x_"


async def test_hostile_arguments_are_shown_as_typed_never_as_markdown(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    await notifier.send(request_(arguments={"note": HOSTILE}), ALICE, key="k")
    card = teams.cards_in(1)[0].card
    for text in _texts(card):
        assert text["kind"] in ("TextRun", "Input.Text", "action")  # never TextBlock / FactSet
    assert any(HOSTILE in t["text"] for t in _texts(card))


async def test_huge_arguments_and_batches_stay_under_28_kb(
    teams: FakeTeams, notifier: TeamsNotifier
) -> None:
    huge = request_(arguments={"blob": "é" * 200_000, "more": ["x" * 5000] * 20})
    await notifier.send(huge, ALICE, key="k1")
    batch = [request_(batch_id="b" * 16, arguments={"cmd": "y" * 5000, "n": n}) for n in range(20)]
    await notifier.send_batch(batch, ALICE, key="k2")
    for sent in teams.requests_to("send"):
        assert len(sent.raw_body) <= MAX_BYTES + 512, len(sent.raw_body)  # + JSON spacing


def _texts(node: object, out: list[dict[str, str]] | None = None) -> list[dict[str, str]]:
    """Every visible string of a card and the kind of element that shows it."""
    found = [] if out is None else out
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "TextRun":
            found.append({"kind": "TextRun", "text": str(node["text"])})
        elif kind in ("TextBlock", "FactSet"):
            found.append({"kind": str(kind), "text": json.dumps(node)})
        elif kind == "Input.Text":
            found.append({"kind": "Input.Text", "text": str(node.get("placeholder"))})
        elif isinstance(kind, str) and kind.startswith("Action."):
            found.append({"kind": "action", "text": str(node.get("title"))})
        for value in node.values():
            if isinstance(value, dict | list):
                _texts(value, found)
    elif isinstance(node, list):
        for item in node:
            _texts(item, found)
    return found
