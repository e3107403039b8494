"""Every benchmark still runs: each ``benchmarks/bench_*.py`` once with ``--quick``.

A benchmark nobody runs breaks unseen (an ask refused, an API renamed) and
its figure can then not be measured on the day it is needed. ``--quick``
runs each with tiny sizes in seconds and judges no figure: this only says
the benchmark works end to end. The list is read from the directory, so a
new benchmark is run here from the day it is added.

What a benchmark needs beyond the test extras: ``wrk`` (``bench_allowed``),
Debian's chromium (``bench_inbox``), PostgreSQL (``bench_replicas``; the
session's server) and ``tree-sitter-bash`` (``bench_shell_lexers``, the
``bench`` extra). Without one, its case skips, unless
``TAPGATE_REQUIRE_BENCH_TOOLS=1`` (CI sets it and installs them): then it fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.locks import exclusive

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = sorted(path.name for path in (ROOT / "benchmarks").glob("bench_*.py"))


def _image() -> bool:
    """Whether Docker answers and holds the image ``bench_container.py`` measures."""
    if shutil.which("docker") is None:
        return False
    found = subprocess.run(
        ["docker", "image", "inspect", "tapgate"], capture_output=True, check=False
    )
    return found.returncode == 0


NOT_REQUIRED = {"bench_container.py"}
"""Skipped without its tool even in CI: the image is built by the container suite
(``tests/container``) under its own tag, and building another here would add minutes."""

NEEDS: dict[str, tuple[str, bool]] = {
    "bench_allowed.py": ("wrk", shutil.which("wrk") is not None),
    "bench_inbox.py": ("chromium", Path("/usr/bin/chromium").exists()),
    "bench_shell_lexers.py": (
        "tree-sitter-bash (the bench extra)",
        importlib.util.find_spec("tree_sitter_bash") is not None,
    ),
    "bench_container.py": ("Docker and the image tapgate (docker build -t tapgate .)", _image()),
}
"""What a benchmark needs that the test extras do not bring, and whether it is here."""

SHOWS = {
    "bench_audit.py": "audit append, per row",
    "bench_policy_paths.py": "after/before median",
    "bench_shell_lexers.py": "ratio tree-sitter / hand-written",
}
"""A line each benchmark that judges nothing prints once it has measured something."""

Run = subprocess.CompletedProcess[str]


SLOWEST_FIRST = ("bench_server.py", "bench_inbox.py", "bench_long_polls.py", "bench_replicas.py")
"""Started first, so the two at a time finish together rather than one long one last."""


def _missing(name: str) -> str | None:
    needed = NEEDS.get(name)
    return needed[0] if needed is not None and not needed[1] else None


def _quick(name: str, env: dict[str, str]) -> Run:
    """``benchmarks/NAME --quick`` in a session of its own, killed whole if it hangs."""
    argv = [sys.executable, str(ROOT / "benchmarks" / name), "--quick"]
    pipe = subprocess.PIPE
    with subprocess.Popen(
        argv, cwd=ROOT, env=env, text=True, start_new_session=True, stdout=pipe, stderr=pipe
    ) as proc:
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its servers too, not only the script
            out, err = proc.communicate()
        return Run(argv, proc.returncode, out, err)


def _quick_once(
    name: str,
    env: dict[str, str],
    folder: Path,
    quick: Callable[[str, dict[str, str]], Run] = _quick,
) -> Run:
    """``quick(name)`` once per test run, whichever worker gets to it first.

    ``--dist worksteal`` may split this module between two workers, and each
    would then run every benchmark again (~85 s of CPU, seen in a clean-clone
    run). The first to take a benchmark's lock runs it and leaves the result
    beside the lock; a worker that waited for the lock reads that result. A
    worker that died holding the lock released it, left no result, and the
    next one runs the benchmark itself.
    """
    result = folder / f"{name}.json"
    with exclusive(folder / f"{name}.lock"):
        if result.exists():
            code, out, err = json.loads(result.read_text())
            return Run([name, "--quick"], code, out, err)
        done = quick(name, env)
        partial = result.with_suffix(".partial")
        partial.write_text(json.dumps([done.returncode, done.stdout, done.stderr]))
        partial.replace(result)
        return done


@pytest.fixture(scope="module")
def quick_runs(
    request: pytest.FixtureRequest, run_folder: Path
) -> Iterator[dict[str, Future[Run]]]:
    """The selected benchmarks' quick runs, two at a time (the CI machine has two cores).

    Their figures disturb each other, which is fine: a quick run judges none.
    """
    selected = [
        str(item.callspec.params["name"])
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_quick_run"
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TAPGATE_BENCH_PROFILE", None)
    if "bench_replicas.py" in selected:
        env["TAPGATE_TEST_PG_URL"] = request.getfixturevalue("pg_server")
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    order = sorted(selected, key=lambda name: rank.get(name, len(rank)))
    folder = run_folder / "quick-runs"
    folder.mkdir(exist_ok=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {
            name: pool.submit(_quick_once, name, env, folder)
            for name in order
            if _missing(name) is None
        }


@pytest.mark.parametrize("name", BENCHMARKS)
def test_quick_run(name: str, quick_runs: dict[str, Future[Run]]) -> None:
    """``python benchmarks/NAME --quick`` exits 0 having printed its figures."""
    missing = _missing(name)
    if missing is not None:
        if os.environ.get("TAPGATE_REQUIRE_BENCH_TOOLS") == "1" and name not in NOT_REQUIRED:
            pytest.fail(f"TAPGATE_REQUIRE_BENCH_TOOLS is set but {name} needs {missing}")
        pytest.skip(f"{name} needs {missing}")
    done = quick_runs[name].result()
    output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, output
    assert SHOWS.get(name, "targets: not judged (--quick)") in done.stdout, output


def test_every_benchmark_is_listed() -> None:
    """The directory holds the benchmarks this module runs (the glob found them)."""
    assert "bench_server.py" in BENCHMARKS
    assert set(NEEDS) | set(SHOWS) <= set(BENCHMARKS)


def test_a_module_split_between_workers_runs_each_benchmark_once(tmp_path: Path) -> None:
    """Two runners of one quick run (two workers, here two threads) share its one result."""
    calls: list[str] = []

    def quick(name: str, env: dict[str, str]) -> Run:
        calls.append(name)
        time.sleep(0.2)  # the other runner arrives while this one holds the lock
        return Run([name], 3, f"out of {name}", "err")

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda _: _quick_once("bench_x.py", {}, tmp_path, quick), range(2)))
    assert calls == ["bench_x.py"]
    shared = (3, "out of bench_x.py", "err")
    assert [(r.returncode, r.stdout, r.stderr) for r in runs] == [shared, shared]


def test_a_runner_that_died_leaves_the_quick_run_to_the_next(tmp_path: Path) -> None:
    """No result beside a released lock: the next runner runs the benchmark itself."""
    outcomes: list[Run | None] = [None, Run(["bench_x.py"], 0, "measured", "")]

    def quick(name: str, env: dict[str, str]) -> Run:
        done = outcomes.pop(0)
        if done is None:
            raise RuntimeError("the worker died mid-run")
        return done

    with pytest.raises(RuntimeError):
        _quick_once("bench_x.py", {}, tmp_path, quick)
    assert _quick_once("bench_x.py", {}, tmp_path, quick).stdout == "measured"
    assert outcomes == []
