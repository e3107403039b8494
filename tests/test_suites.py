"""The suite's own split: the folders and files marked ``slow`` exist, and mark their tests."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests import suites
from tests.suites import SLOW_FILES, SLOW_FOLDERS, SLOW_PARAMS, TESTS, _deselects, pg_data_parent


def test_every_slow_parameter_is_one_a_fixture_has() -> None:
    """A renamed parameter would silently move its process-starting cases into the inner loop."""
    offered: set[tuple[str, object]] = set()
    for path in TESTS.rglob("test_*.py"):
        source = path.read_text()
        if "params" not in source:  # parsing all of them took most of a second
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for decorator in node.decorator_list:
                    for keyword in getattr(decorator, "keywords", ()):
                        if keyword.arg == "params" and isinstance(keyword.value, ast.List):
                            offered.update(
                                (node.name, value.value)
                                for value in keyword.value.elts
                                if isinstance(value, ast.Constant)
                            )
    assert offered >= SLOW_PARAMS


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
    """Slow exactly when its folder, file or a parameter is listed, whatever else marks it."""
    wrong = []
    for item in request.session.items:
        relative = item.path.relative_to(TESTS)
        params = getattr(item, "callspec", None)
        slow = (
            relative.parts[0] in SLOW_FOLDERS
            or relative.as_posix() in SLOW_FILES
            or any(
                params is not None and params.params.get(name, object()) == value
                for name, value in SLOW_PARAMS
            )
        )
        if slow != (item.get_closest_marker("slow") is not None):
            wrong.append(item.nodeid)
    assert wrong == []


def test_the_postgresql_side_of_db_url_is_marked_postgres(
    db_url: str, request: pytest.FixtureRequest
) -> None:
    """The inner loop's ``not postgres`` leaves out exactly the cases on a PostgreSQL database."""
    marked = request.node.get_closest_marker("postgres") is not None
    assert marked == db_url.startswith("postgresql")


@pytest.mark.parametrize(
    ("markexpr", "deselects"),
    [
        ("not slow", True),
        ("not slow and not postgres", True),
        ("not postgres and not slow", True),
        ("", False),
        ("slow", False),
        ("not postgres", False),
        ("not slow or postgres", False),
        ("postgres or not slow", False),
    ],
)
def test_slow_folders_are_left_uncollected_only_when_m_deselects_every_slow_test(
    markexpr: str, deselects: bool
) -> None:
    assert _deselects("slow", markexpr) is deselects


@pytest.mark.parametrize(
    ("markexpr", "deselects"),
    [("not slow and not postgres", True), ("not postgres", True), ("not slow", False), ("", False)],
)
def test_the_inner_loop_starts_no_postgresql(markexpr: str, deselects: bool) -> None:
    """The controller starts the shared server only when a case on PostgreSQL can run."""
    assert _deselects("postgres", markexpr) is deselects


def test_postgresql_data_goes_to_a_writable_folder_with_room_else_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A roomy, writable folder is chosen; a missing or a too small one leaves the default."""
    free = os.statvfs(tmp_path)
    room = free.f_bavail * free.f_frsize
    monkeypatch.setattr(suites, "SHM_ROOM", room // 2)
    assert pg_data_parent(tmp_path) == str(tmp_path)
    assert pg_data_parent(tmp_path / "missing") is None
    monkeypatch.setattr(suites, "SHM_ROOM", room * 2)
    assert pg_data_parent(tmp_path) is None
