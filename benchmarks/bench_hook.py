"""Start-up cost of the agent-side and operator commands, against baselines in the same run.

Run: ``python benchmarks/bench_hook.py [--tapgate PATH] [--runs 15] [--rounds 3] [--quick]``.
``--tapgate`` picks the ``tapgate`` script to time (another checkout's
``.venv/bin/tapgate`` measures that checkout: how "before" was measured); its
interpreter runs the ``python -c`` baselines and its ``tapgate serve`` is the
server (SQLite, a policy that allows the calls asked), so every figure of a
run shares one machine state.

Each round times, interleaved (one of each per turn, ``--runs`` turns), the
wall time of: ``curl`` asking the server the hook's question (skipped with a
note if curl is missing), a tiny ``python -c`` urllib request, ``python -c
pass``, the hook with an allowed call on stdin (``hook``: ``tapgate hook
claude-code`` through the console script; ``hook fast``: the command line
``--print-command`` prints, which the docs put in Claude Code's settings;
``codex fast``: the command ``tapgate hook codex --print-command`` puts in
Codex's ``hooks.json``, with Codex's ``PermissionRequest`` input),
``tapgate run -- true``
(allowed), ``tapgate --version`` (``--help`` for a tapgate without the flag),
``tapgate explain`` and ``tapgate pending``; and five floors: ``py socket``
(the least a hook in Python can do: the interpreter, ``json``, ``socket`` and
the same exchange), ``config`` (reading and validating the config, which
``explain`` and ``pending`` must do), ``yaml+rules`` (importing only PyYAML and
the policy engine, ``tapgate.policy.engine``: what ``explain`` needs with no
config validation and no CLI at all) and ``sqlalchemy`` (importing only the
store's ``sqlalchemy.ext.asyncio``, which ``pending`` needs for either database),
and ``sqlite3+yaml`` beside it (what a second, stdlib-only reader would import).
It prints the medians and the ratios against the baselines; the last lines
give each ratio's spread over the rounds. Targets: the hook as
configured (``hook fast``, ``codex fast``) within 3x curl; ``--version``, ``pending`` and
``explain`` within 4x ``python -c pass``. Exits 1 when the median over the rounds misses one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

from tests.fakes.taps import free_port

from _util import QUICK_HELP, machine, verdict

TOKEN = "bench-hook-agent-token-0123456789"
HOOK_INPUT = {
    "session_id": "bench-session",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "git status"},
    "tool_use_id": "toolu_bench",
}
CODEX_INPUT = {
    "session_id": "bench-session",
    "turn_id": "bench-turn",
    "transcript_path": None,
    "cwd": "/work/app",
    "hook_event_name": "PermissionRequest",
    "model": "gpt-5-codex",
    "permission_mode": "default",
    "tool_name": "Bash",
    "tool_input": {"command": "git status", "description": "Show the working tree"},
}
"""What Codex sends its ``PermissionRequest`` hook (openai/codex's hook input schema)."""
BODY = json.dumps({"tool": "Bash", "arguments": {"command": "git status"}, "session": "s"})
URLLIB = (
    "import urllib.request as u, sys; r = u.Request(sys.argv[1] + '/v1/tool-calls', "
    "data=sys.argv[2].encode(), headers={'Authorization': 'Bearer ' + sys.argv[3], "
    "'Content-Type': 'application/json'}); u.urlopen(r).read()"
)
SOCKET = (
    "import json, socket, sys; body = sys.argv[2].encode(); "
    "s = socket.create_connection(('127.0.0.1', int(sys.argv[1]))); "
    "s.sendall(b'POST /v1/tool-calls HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer ' "
    "+ sys.argv[3].encode() + b'\\r\\nContent-Type: application/json\\r\\n"
    "Connection: close\\r\\nContent-Length: ' + str(len(body)).encode() + b'\\r\\n\\r\\n' + body); "
    "data = b''.join(iter(lambda: s.recv(65536), b'')); "
    "print(json.loads(data.split(b'\\r\\n\\r\\n', 1)[1])['decision'])"
)
"""The floor of any hook in Python: the interpreter, ``json`` and ``socket``, one exchange."""
CONFIG = "from tapgate.config import load_config; import sys; load_config(sys.argv[1])"
"""The floor of ``explain`` and ``pending``: reading and validating the config (YAML, pydantic)."""
RULES = "import yaml, tapgate.policy.engine"
"""The floor of ``explain`` without pydantic: the YAML reader and the policy engine, imported."""
STORE = "import sqlalchemy.ext.asyncio"
"""The floor of ``pending`` on the store's stack: SQLAlchemy's async engine, imported."""
STDLIB_STORE = "import sqlite3, yaml"
"""What a second reader for ``pending`` on SQLite alone would import instead (not built)."""
TARGETS = {"hook fast": ("curl", 3.0), "codex fast": ("curl", 3.0), "--version": ("pass", 4.0)}
TARGETS |= {"explain": ("pass", 4.0), "pending": ("pass", 4.0)}


def config_text(db: Path, port: int) -> str:
    return textwrap.dedent(f"""
        server: {{host: 127.0.0.1, port: {port}, heartbeat_interval: 60}}
        store: {{url: "sqlite:///{db}"}}
        agents: [{{name: bench, token: "{TOKEN}"}}]
        policy:
          tools: {{Bash: {{risk: write, shell: command}}, shell: {{risk: write, shell: command}}}}
          rules:
            - {{tool: Bash, args: {{command: "git status*"}}, action: allow}}
            - {{tool: shell, args: {{command: "true"}}, action: allow}}
    """)


def commands(tapgate: str, url: str, config: Path) -> dict[str, tuple[list[str], bytes]]:
    """Each timed command line and its stdin."""
    python = str(Path(tapgate).with_name("python"))
    found: dict[str, tuple[list[str], bytes]] = {}
    curl = shutil.which("curl")
    if curl is not None:
        auth = f"Authorization: Bearer {TOKEN}"
        found["curl"] = (
            [
                curl,
                "-sf",
                "-o",
                "/dev/null",
                "-H",
                auth,
                "-H",
                "Content-Type: application/json",
                "-d",
                BODY,
                url + "/v1/tool-calls",
            ],
            b"",
        )
    found["urllib"] = ([python, "-c", URLLIB, url, BODY, TOKEN], b"")
    found["pass"] = ([python, "-c", "pass"], b"")
    port = url.rsplit(":", 1)[1]
    found["py socket"] = ([python, "-c", SOCKET, port, BODY, TOKEN], b"")
    found["config"] = ([python, "-c", CONFIG, str(config)], b"")
    found["yaml+rules"] = ([python, "-c", RULES], b"")
    found["sqlalchemy"] = ([python, "-c", STORE], b"")
    found["sqlite3+yaml"] = ([python, "-c", STDLIB_STORE], b"")
    found["hook"] = (
        [tapgate, "hook", "claude-code", "--url", url],
        json.dumps(HOOK_INPUT).encode(),
    )
    printed = subprocess.run(
        [tapgate, "hook", "claude-code", "--print-command", "--url", url],
        capture_output=True,
        text=True,
        check=False,
    )
    if printed.returncode == 0 and printed.stdout.strip():  # a tapgate with the fast path
        found["hook fast"] = (shlex.split(printed.stdout), found["hook"][1])
    codex = subprocess.run(
        [tapgate, "hook", "codex", "--print-command", "--url", url],
        capture_output=True,
        text=True,
        check=False,
    )
    if codex.returncode == 0 and codex.stdout.strip():  # a tapgate with the Codex hook
        [group] = json.loads(codex.stdout)["hooks"]["PermissionRequest"]
        command = shlex.split(group["hooks"][0]["command"])
        found["codex fast"] = (command, json.dumps(CODEX_INPUT).encode())
    found["run true"] = ([tapgate, "run", "--url", url, "--", "true"], b"")
    # A tapgate from before --version existed: its nearest start-up, --help, stands in.
    has_version = subprocess.run([tapgate, "--version"], capture_output=True, check=False)
    found["--version"] = ([tapgate, "--version" if has_version.returncode == 0 else "--help"], b"")
    explain = ["explain", "--config", str(config), "--tool", "Bash", "--args", BODY]
    found["explain"] = ([tapgate, *explain], b"")
    found["pending"] = ([tapgate, "pending", "--config", str(config)], b"")
    return found


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({done.returncode}): {done.stderr.decode()}")
    return took, done.stdout


def one_round(
    cmds: dict[str, tuple[list[str], bytes]], runs: int, env: dict[str, str]
) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    names = list(cmds)
    for turn in range(runs):
        shift = turn % len(names)  # rotate who goes first, so no command always follows another
        for name in names[shift:] + names[:shift]:
            argv, stdin = cmds[name]
            took, out = timed(argv, stdin, env)
            if name.startswith("hook"):
                assert b'"permissionDecision": "allow"' in out, out
            samples[name].append(took)
    return {name: statistics.median(values) for name, values in samples.items()}


def start_server(tapgate: str, config: Path, url: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [tapgate, "serve", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(400):
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as answer:
                if answer.status == 200:
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("tapgate serve did not become ready")


def report(rounds: list[dict[str, float]]) -> bool:
    met = True
    baselines = [b for b in ("curl", "urllib", "pass") if b in rounds[0]]
    for i, medians in enumerate(rounds, 1):
        print(f"\nround {i}: median wall, ms (ratio to {' / '.join(baselines)})")
        for name, ms in medians.items():
            shown = " / ".join(f"{ms / medians[b]:.1f}x" for b in baselines)
            print(f"  {name:12s} {ms:7.1f}   {shown}")
        print(f"  (load average at the end of the round: {' '.join(map(str, os.getloadavg()))})")
    print("\nspread over the rounds (min - max of the round medians):")
    for name in rounds[0]:
        spread = [r[name] for r in rounds]
        line = f"  {name:12s} {min(spread):6.1f} - {max(spread):6.1f} ms"
        for baseline in baselines:
            if baseline != name:
                ratios = [r[name] / r[baseline] for r in rounds]
                line += f"   vs {baseline}: {min(ratios):.1f} - {max(ratios):.1f}x"
        print(line)
    print("\ntargets (median over the rounds):")
    for name, (base, limit) in TARGETS.items():
        if name not in rounds[0]:  # a tapgate from before the fast path: its hook stands in
            name = "hook"  # noqa: PLW2901
        if base not in rounds[0]:
            print(f"  {name}: no {base} on this machine, not checked")
            continue
        ratio = statistics.median(r[name] / r[base] for r in rounds)
        ok = ratio <= limit
        met &= ok
        print(
            f"  {name:12s} {ratio:.1f}x {base} (target <= {limit:g}x): {'met' if ok else 'MISSED'}"
        )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = str(Path(sys.executable).with_name("tapgate"))
    parser.add_argument("--tapgate", default=default, help="the tapgate script to time")
    parser.add_argument("--runs", type=int, default=15, help="runs of each command per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, for the spread")
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.rounds = 1, 1
    tapgate = os.path.abspath(args.tapgate)
    print(f"bench_hook: {machine()}; timing {tapgate}; {args.runs} runs x {args.rounds} rounds")
    if shutil.which("curl") is None:
        print("note: curl is not installed: the hook is compared with the urllib baseline only")
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        config = Path(tmp) / "tapgate.yaml"
        config.write_text(config_text(Path(tmp) / "bench.db", port))
        env = {**os.environ, "TAPGATE_AGENT_TOKEN": TOKEN}
        for name in ("http_proxy", "https_proxy", "all_proxy"):
            env.pop(name, None)
            env.pop(name.upper(), None)
        subprocess.run([tapgate, "db", "upgrade", "--config", str(config)], check=True, env=env)
        server = start_server(tapgate, config, url)
        try:
            cmds = commands(tapgate, url, config)
            rounds = [one_round(cmds, args.runs, env) for _ in range(args.rounds)]
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    return verdict(report(rounds), quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
