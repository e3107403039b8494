"""The postback reader against line-bot-sdk's: the same events, or the same refusal.

Taps skip the SDK's pydantic-v1 round trip (``_line_events._postback``);
what keeps that honest is this comparison on generated postbacks, well
formed and broken one field (or one nested field) at a time, each read both
ways from the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import event as observe
from hypothesis import given, settings
from hypothesis import strategies as st

from tapgate.channels.line.events import Event, EventReader, Malformed, decode, encode
from tapgate.channels.line.signature import line_signature

SECRET = "test-line-channel-secret"
READER = EventReader(SECRET)

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
# Values that sit next to the valid ones: the types the SDK's strict fields refuse.
NEAR: st.SearchStrategy[Any] = st.sampled_from(
    [None, "", "x", 0, 1, True, False, 1.5, [], {}, "active", "user"]
)

SOURCE = st.one_of(
    st.fixed_dictionaries({"type": st.just("user")}, optional={"userId": st.text(max_size=4)}),
    st.fixed_dictionaries(
        {"type": st.just("group"), "groupId": st.text(max_size=4)},
        optional={"userId": st.text(max_size=4)},
    ),
    st.fixed_dictionaries(
        {"type": st.just("room"), "roomId": st.text(max_size=4)},
        optional={"userId": st.text(max_size=4)},
    ),
)
POSTBACK = st.fixed_dictionaries(
    {
        "type": st.just("postback"),
        "mode": st.sampled_from(["active", "standby"]),
        "timestamp": st.integers(0, 2**53),
        "webhookEventId": st.text(max_size=8),
        "deliveryContext": st.fixed_dictionaries({"isRedelivery": st.booleans()}),
        "postback": st.fixed_dictionaries(
            {"data": st.text(max_size=12)},
            optional={"params": st.dictionaries(st.text(max_size=4), st.text(max_size=4))},
        ),
    },
    optional={"replyToken": st.text(max_size=6), "source": SOURCE, "extra": ANY_JSON},
)


@st.composite
def postbacks(draw: st.DrawFn) -> dict[str, Any]:
    """A postback, valid or with one field (top level or nested) replaced or removed."""
    event: dict[str, Any] = draw(POSTBACK)
    how = draw(st.sampled_from(["valid", "top", "nested", "drop"]))
    if how == "top":
        key = draw(st.sampled_from(sorted(set(event) - {"type"})))
        event[key] = draw(NEAR | ANY_JSON)
    elif how == "nested":
        nested = [k for k in ("deliveryContext", "postback", "source") if k in event]
        key = draw(st.sampled_from(nested))
        inner = dict(event[key])
        field = draw(st.sampled_from([*inner, "params", "userId", "groupId", "roomId"]))
        inner[field] = draw(NEAR | ANY_JSON)
        event[key] = inner
    elif how == "drop":
        event.pop(draw(st.sampled_from(sorted(set(event) - {"type"}))))
    observe(how)
    return event


def outcome(read: Any, body: bytes) -> list[Event] | str:
    try:
        events: list[Event] = read(body, line_signature(SECRET.encode(), body))
    except Malformed:
        return "malformed"
    return events


def _coercible(value: Any) -> bool:
    """Whether pydantic v1 (``dict(value)``) would turn a non-object into an object."""
    if isinstance(value, dict):
        return False
    try:
        dict(value)
    except (TypeError, ValueError):
        return False
    return True


def _pairs_where_sdk_wants_objects(event: dict[str, Any]) -> bool:
    """The one documented difference: where an object belongs, the SDK reads anything
    ``dict()`` accepts (a list of pairs, an empty list, an empty string) as an object; we
    refuse, as LINE sends objects."""
    nested = [event.get(k) for k in ("deliveryContext", "postback")]
    postback = event.get("postback")
    if isinstance(postback, dict):
        nested.append(postback.get("params"))
    return any(_coercible(value) for value in nested)


@settings(max_examples=600, deadline=None)
@given(events=st.lists(postbacks(), min_size=1, max_size=3))
def test_postbacks_read_as_the_sdk_reads_them(events: list[dict[str, Any]]) -> None:
    body = json.dumps({"destination": "U1", "events": events}).encode()
    ours = outcome(READER.read, body)
    sdks = outcome(READER.read_with_sdk, body)
    observe("malformed" if ours == "malformed" else "read")
    if ours == "malformed" and sdks != "malformed":
        assert any(_pairs_where_sdk_wants_objects(e) for e in events), (events, sdks)
    else:
        assert ours == sdks, events


TAP: dict[str, Any] = {
    "type": "postback",
    "mode": "active",
    "timestamp": 1763700000000,
    "webhookEventId": "01HEVENT",
    "deliveryContext": {"isRedelivery": True},
    "replyToken": "r1",
    "source": {"type": "user", "userId": "U1"},
    "postback": {"data": "v=1&a=approve&r=x"},
}
"""A postback as LINE sends it for a tap."""


def test_a_tap_is_read_without_the_sdk() -> None:
    """The hot path really is taken: a reader whose SDK parser would fail still reads a tap."""
    tap = TAP
    body = json.dumps({"events": [tap]}).encode()
    wrong_signature = "not the signature"  # the SDK parser would refuse it; read() skips it
    (event,) = READER.read(body, wrong_signature)
    assert (event.kind, event.event_id, event.redelivery, event.user_id, event.data) == (
        "postback",
        "01HEVENT",
        True,
        "U1",
        "v=1&a=approve&r=x",
    )
    with pytest.raises(Malformed):
        READER.read_with_sdk(body, wrong_signature)


@pytest.mark.parametrize(("field", "value"), [("webhookEventId", "01\x00E"), ("userId", "U\x00")])
@pytest.mark.parametrize("kind", ["postback", "message"])
def test_an_id_with_a_nul_is_malformed_for_both_readers(field: str, value: str, kind: str) -> None:
    """No LINE id carries a NUL, and PostgreSQL cannot store one: refused, not a 503 later."""
    event = {**TAP, "source": {"type": "user", "userId": "U1"}}
    if kind == "message":
        del event["postback"]
        text = {"type": "text", "id": "1", "text": "hi", "quoteToken": "q"}
        event |= {"type": "message", "message": text}
    if field == "userId":
        event["source"] = {"type": "user", "userId": value}
    else:
        event[field] = value
    body = json.dumps({"destination": "U1", "events": [event]}).encode()
    assert outcome(READER.read, body) == outcome(READER.read_with_sdk, body) == "malformed"


@pytest.mark.parametrize(
    "event",
    [
        Event(kind="postback", event_id="E", redelivery=False, reply_token="r", source_type="user",
              user_id="U", data="d"),
        Event(kind="message", event_id="E", redelivery=True, reply_token=None, source_type=None,
              user_id=None, text="answer 3fA9xK2b: ✓ yes", answer=("3fA9xK2b", "✓ yes")),
        Event(kind="message", event_id="E", redelivery=False, reply_token="r", source_type="user",
              user_id="U", text="grants", command="grants"),
    ],
)  # fmt: skip
def test_encode_stores_every_field_and_decode_reads_it_back(event: Event) -> None:
    stored = json.loads(encode(event))
    assert set(stored) == {field.name for field in dataclasses.fields(Event)}
    assert decode(encode(event)) == event
