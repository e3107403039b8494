"""Allowed tool calls over HTTP per second, against a bare aiohttp handler in the same run.

Run: ``python benchmarks/bench_allowed.py [--tapgate PATH] [--rounds 5] [--seconds 5] [--quick]``.
Needs ``wrk`` (``apt-get install wrk``): one load generator, written in C, so
that the client's cost is small and the same for both servers; a Python client
on these two cores would take most of a core from whichever server it drives.

Servers, each in its own process, all started before the first round (and,
with ``--before SRC``, another build served the same way: ``git archive
<commit> src | tar -x -C /tmp/before`` then ``--before /tmp/before/src``):

- **bare**: an aiohttp handler that reads the body, checks the bearer token
  (``hmac.compare_digest``) and answers a small JSON; what any HTTP service of
  this shape costs in CPython with aiohttp, and nothing more;
- **tapgate**: ``tapgate serve`` on SQLite, with a policy that allows the call
  asked, once per ``server.access_log`` setting given by ``--access-log``
  (``default`` writes no key, which is how "before" was measured on a build
  without the setting).

``POST /v1/tool-calls`` with a Claude-Code-shaped call (``Bash``, ``git
status``, a session) over 32 kept-alive connections, ``--seconds`` per run
after a one-second warm-up. Each round runs every server once, rotating who
goes first, so each round's ratio compares servers that saw the same machine;
the figure is the median of the rounds' ratios, with their spread. Server CPU
per request (``/proc/<pid>/stat``, every thread) is printed beside the rate:
it moves less with the load than the rate does. Target:
tapgate at its default setting >= 0.5 of bare; exits 1 when missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

TOKEN = "bench-allowed-agent-token-0123456789"
BODY = json.dumps(
    {"tool": "Bash", "arguments": {"command": "git status"}, "session": "bench-session"}
)
CONNECTIONS = 32
TARGET = 0.5

BARE = textwrap.dedent("""
    import hmac, sys
    from aiohttp import web
    TOKEN = ("Bearer " + sys.argv[2]).encode()

    async def handle(request):
        await request.read()
        if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), TOKEN):
            return web.json_response({"error": "unauthorized"}, status=401)
        return web.json_response({"decision": "allow", "status": "allowed"})

    app = web.Application()
    app.router.add_post("/v1/tool-calls", handle)
    app.router.add_get("/readyz", lambda request: web.json_response({}))
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
""")

WRK_SCRIPT = textwrap.dedent("""
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    wrk.headers["Authorization"] = "Bearer {token}"
    wrk.body = '{body}'
""")


def config_text(db: Path, port: int, access_log: str) -> str:
    setting = "" if access_log == "default" else f", access_log: {access_log}"
    return textwrap.dedent(f"""
        server: {{host: 127.0.0.1, port: {port}, heartbeat_interval: 60{setting}}}
        store: {{url: "sqlite:///{db}"}}
        agents: [{{name: bench, token: "{TOKEN}", max_pending: 0, asks_per_minute: 0}}]
        policy:
          tools: {{Bash: {{risk: write, shell: command}}}}
          rules:
            - {{tool: Bash, args: {{command: "git status*"}}, action: allow}}
    """)


class Target:
    """One server process under test and how to reach it."""

    def __init__(
        self, name: str, argv: list[str], port: int, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.url = f"http://127.0.0.1:{port}"
        out = subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=out, stderr=out, env=env)
        for _ in range(400):
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{name} did not become ready")

    def cpu_seconds(self) -> float:
        """User + system CPU of the whole process (every thread) so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wrk(url: str, script: Path, seconds: float) -> tuple[float, int]:
    """Requests per second and requests done; any non-2xx answer fails the run."""
    argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds:g}s", "-s", str(script), url]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"errors under load against {url}:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))  # type: ignore[union-attr]
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return rate, done


def measure(target: Target, script: Path, seconds: float) -> tuple[float, float]:
    """(requests / s, server CPU µs per request) for one run, after a warm-up."""
    wrk(target.url + "/v1/tool-calls", script, 1)
    cpu = target.cpu_seconds()
    rate, done = wrk(target.url + "/v1/tool-calls", script, seconds)
    return rate, (target.cpu_seconds() - cpu) / done * 1e6


def start(tmp: Path, tapgate: str, access_logs: list[str], before: str | None) -> list[Target]:
    targets = []
    bare = tmp / "bare.py"
    bare.write_text(BARE)
    python = str(Path(tapgate).with_name("python"))
    port = free_port()
    targets.append(Target("bare", [python, str(bare), str(port), TOKEN], port))
    for setting in access_logs:
        port = free_port()
        config = tmp / f"tapgate-{setting}.yaml"
        config.write_text(config_text(tmp / f"{setting}.db", port, setting))
        argv = [tapgate, "serve", "--config", str(config)]
        targets.append(Target(f"tapgate ({setting})", argv, port))
    if before is not None:  # another build's package ahead of the installed one
        port = free_port()
        config = tmp / "tapgate-before.yaml"
        config.write_text(config_text(tmp / "before.db", port, "default"))
        env = {**os.environ, "PYTHONPATH": before}
        argv = [tapgate, "serve", "--config", str(config)]
        targets.append(Target("before (default)", argv, port, env))
    return targets


def report(rounds: list[dict[str, tuple[float, float]]]) -> bool:
    names = list(rounds[0])
    for i, results in enumerate(rounds, 1):
        bare = results["bare"][0]
        print(f"round {i}:")
        for name, (rate, cpu) in results.items():
            share = rate / bare
            print(f"  {name:22s} {rate:8.0f}/s  {cpu:6.0f} µs CPU/request  {share:.2f} of bare")
    print("\nmedian over the rounds (spread = lowest - highest round):")
    met = True
    for name in names[1:]:
        ratios = [r[name][0] / r["bare"][0] for r in rounds]
        cpus = [r[name][1] / r["bare"][1] for r in rounds]
        rate = statistics.median(r[name][0] for r in rounds)
        ratio = statistics.median(ratios)
        print(
            f"  {name:22s} {rate:8.0f}/s  {ratio:.2f} of bare ({min(ratios):.2f} - "
            f"{max(ratios):.2f}); CPU per request {statistics.median(cpus):.2f}x bare "
            f"({min(cpus):.2f} - {max(cpus):.2f})"
        )
        if name == names[1]:
            met = ratio >= TARGET
    bare_rates = [r["bare"][0] for r in rounds]
    bare_cpu = statistics.median(r["bare"][1] for r in rounds)
    print(
        f"  {'bare':22s} {statistics.median(bare_rates):8.0f}/s  ({min(bare_rates):.0f} - "
        f"{max(bare_rates):.0f}); {bare_cpu:.0f} µs CPU/request"
    )
    print(f"target: {names[1]} >= {TARGET} of bare")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = str(Path(sys.executable).with_name("tapgate"))
    parser.add_argument("--tapgate", default=default, help="the tapgate script to serve with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each run")
    parser.add_argument(
        "--access-log",
        default="default,all",
        help="server.access_log settings to run, comma-separated; the first one is the "
        "target's (default: 'default,all'; 'default' writes no key)",
    )
    parser.add_argument(
        "--before",
        metavar="SRC",
        help="also serve another build (its src directory, put on PYTHONPATH), same rounds",
    )
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.access_log = 1, 1, "default"
    if shutil.which("wrk") is None:
        print("bench_allowed needs wrk on the PATH (apt-get install wrk)", file=sys.stderr)
        return 2
    tapgate = os.path.abspath(args.tapgate)
    print(
        f"bench_allowed: {machine()}; {tapgate}; wrk -t1 -c{CONNECTIONS}, "
        f"{args.seconds:g}s x {args.rounds} rounds; load average {os.getloadavg()}"
    )
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        script = tmp / "post.lua"
        script.write_text(WRK_SCRIPT.format(token=TOKEN, body=BODY))
        targets = start(tmp, tapgate, args.access_log.split(","), args.before)
        try:
            rounds = []
            for i in range(args.rounds):
                order = targets[i % len(targets) :] + targets[: i % len(targets)]
                results = {t.name: measure(t, script, args.seconds) for t in order}
                rounds.append({t.name: results[t.name] for t in targets})
        finally:
            for target in targets:
                target.stop()
    print(f"load average at the end: {os.getloadavg()}")
    return verdict(report(rounds), quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
