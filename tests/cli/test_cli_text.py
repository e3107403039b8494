"""How the CLI writes for people: durations, zoned times, colour only on a terminal."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone

import pytest

from tapgate.cli.text import colour_enabled, format_time, paint, readable_duration


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (893, "14m 53s"),
        (0, "0s"),
        (-5, "0s"),
        (59.9, "59s"),
        (60, "1m"),
        (3605, "1h"),
        (3660, "1h 1m"),
        (90061, "1d 1h"),
    ],
)
def test_durations_read_as_units(seconds: float, shown: str) -> None:
    assert readable_duration(seconds) == shown


def test_times_carry_their_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    assert format_time(datetime(2026, 11, 21, 18, 0, 3, tzinfo=tokyo)) == "2026-11-21 09:00:03 UTC"
    assert format_time(datetime(2026, 11, 21, 9, 0, 3, tzinfo=UTC)) == "2026-11-21 09:00:03 UTC"


def test_colour_only_on_a_terminal_that_allows_it() -> None:
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as terminal:
        assert colour_enabled(terminal, {"TERM": "xterm"})
        assert not colour_enabled(terminal, {"TERM": "xterm", "NO_COLOR": "1"})
        assert not colour_enabled(terminal, {"TERM": "dumb"})
        assert colour_enabled(terminal, {"NO_COLOR": ""})  # only a non-empty value counts
    os.close(leader)


def test_no_colour_in_a_file(tmp_path: object) -> None:
    with open(os.devnull, "w") as stream:
        assert not colour_enabled(stream, {})
        assert paint("x", "red", stream) == "x"
