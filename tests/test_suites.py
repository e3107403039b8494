"""The suite's own split: the folders and files marked ``slow`` exist, and mark their tests."""

from __future__ import annotations

import pytest

from tests.suites import SLOW_FILES, SLOW_FOLDERS, TESTS


def test_every_slow_folder_and_file_exists() -> None:
    """A renamed folder would silently move its slow tests into the fast inner loop."""
    missing = sorted(
        [f for f in SLOW_FOLDERS if not (TESTS / f).is_dir()]
        + [f for f in SLOW_FILES if not (TESTS / f).is_file()]
    )
    assert missing == []


def test_a_fast_test_is_not_marked_slow(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("slow") is None


def test_every_collected_test_is_marked_by_its_folder(request: pytest.FixtureRequest) -> None:
    """Slow exactly when its folder or file is listed, whatever else marks it."""
    wrong = []
    for item in request.session.items:
        relative = item.path.relative_to(TESTS)
        slow = relative.parts[0] in SLOW_FOLDERS or relative.as_posix() in SLOW_FILES
        if slow != (item.get_closest_marker("slow") is not None):
            wrong.append(item.nodeid)
    assert wrong == []
