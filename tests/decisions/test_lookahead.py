"""``core.lookahead``: a read started for an event is taken once, by that event, or dropped."""

from __future__ import annotations

import asyncio
import gc

import pytest

from tapgate.decisions.lookahead import Lookahead


async def _value(value: str, started: list[str]) -> str:
    started.append(value)
    return value


async def test_a_read_is_taken_once_by_its_event() -> None:
    ahead: Lookahead[str] = Lookahead()
    started: list[str] = []
    ahead.start("e1", _value("pending", started))
    task = ahead.take("e1")
    assert task is not None
    assert await task == "pending"
    assert ahead.take("e1") is None  # a second take reads afresh: never a stale result
    assert ahead.take("e2") is None  # another event never gets it
    assert ahead.take(None) is None  # a replay started nothing


async def test_dropped_reads_are_cancelled_and_their_errors_not_reported() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    ahead: Lookahead[str] = Lookahead()
    cancelled: list[str] = []

    async def slow() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return "late"

    async def failing() -> str:
        raise RuntimeError("store down")

    ahead.start("slow", slow())
    ahead.start("failing", failing())
    await asyncio.sleep(0.01)  # the failing read has failed, the slow one waits
    ahead.drop(["slow", "failing", "never-started"])
    await asyncio.sleep(0)
    assert cancelled == ["slow"]
    assert ahead.take("slow") is None and ahead.take("failing") is None
    gc.collect()  # an unretrieved task exception is reported when the task is collected
    await asyncio.sleep(0)
    assert reported == []


async def test_a_taken_read_raises_its_error_to_the_taker() -> None:
    ahead: Lookahead[str] = Lookahead()

    async def failing() -> str:
        raise RuntimeError("store down")

    ahead.start("e1", failing())
    task = ahead.take("e1")
    assert task is not None
    with pytest.raises(RuntimeError, match="store down"):
        await task


async def test_starting_again_for_an_event_replaces_the_first_read() -> None:
    ahead: Lookahead[str] = Lookahead()
    started: list[str] = []
    ahead.start("e1", _value("first", started))
    ahead.start("e1", _value("second", started))
    task = ahead.take("e1")
    assert task is not None and await task == "second"
    assert started == ["second"]  # the first was cancelled before it ran
