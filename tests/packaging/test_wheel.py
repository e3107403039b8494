"""The install path docs/deploy.md gives a new user: build the wheel, install it, run it.

tapgate is not on PyPI, so a server gets it as a wheel built from a checkout.
This builds that wheel (setuptools from the package index, as ``pip wheel``
does anywhere), installs it into a fresh virtual environment with
``--no-deps``, lends that environment this one's dependencies through a
``.pth`` line (a plain path: the editable install's own ``.pth`` files there
are not processed, so the wheel's copy is the one imported), and runs the
installed script on the shipped examples from a directory outside the
checkout.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import tapgate
from tests.wheels import build_wheel

ROOT = Path(__file__).parents[2]


def run(
    *argv: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None, stdin: str = ""
) -> str:
    result = subprocess.run(
        [str(a) for a in argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_wheel_installs_and_runs_on_the_shipped_examples(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "--no-deps", "-q")
    [wheel] = wheels.glob("tapgate-*.whl")

    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(fresh)
    python = fresh / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel)
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    (Path(site) / "_lent_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAPGATE_", "PYTHON"))}
    script = fresh / "bin" / "tapgate"
    imported = run(python, "-c", "import tapgate; print(tapgate.__file__)", cwd=elsewhere)
    assert imported.startswith(site), imported  # the wheel's copy, not the checkout's
    assert run(script, "--version", env=env, cwd=elsewhere) == f"tapgate {tapgate.__version__}\n"
    checked = run(
        script, "check-config", "--config", ROOT / "examples" / "local.yaml", env=env, cwd=elsewhere
    )
    assert checked.startswith("config OK")
    env["TAPGATE_AGENT_TOKEN"] = "wheel-test-token-0123456789"
    checked = run(
        script,
        "check-config",
        "--config",
        ROOT / "examples" / "claude-code.yaml",
        env=env,
        cwd=elsewhere,
    )
    assert "agents: 1" in checked
    # The migrations ship in the wheel: a database can be created from it.
    store = f"sqlite:///{tmp_path / 'wheel.db'}"
    assert "revision" in run(script, "db", "upgrade", "--url", store, env=env, cwd=elsewhere)
    # The web inbox's stylesheet and script ship as package data (no build step, no CDN).
    static = Path(site) / "tapgate" / "server" / "web_inbox" / "static"
    assert {p.name for p in static.iterdir()} >= {"inbox.css", "inbox.js", "favicon.svg"}
    # The hook's fast command runs the wheel's file, and hands what it cannot answer (here a
    # server nobody listens at) to the wheel's `python -P -m tapgate hook claude-code`.
    printed = run(script, "hook", "claude-code", "--print-command", "--retry-for", "0", env=env)
    command = shlex.split(printed)
    fast = str(Path(site) / "tapgate" / "client" / "_fast_hook.py")
    assert command[:4] == [str(python), "-I", "-S", fast]
    hook_input = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"})
    unreachable = "http://127.0.0.1:9"
    answered = run(*command, "--url", unreachable, env=env, cwd=elsewhere, stdin=hook_input)
    reason = json.loads(answered)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "server unreachable at http://127.0.0.1:9" in reason, reason
