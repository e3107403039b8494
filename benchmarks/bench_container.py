"""The container image: its size, and a cold container's time to answer ``/readyz``.

Cold means a new container on a new, empty volume: the database is created and
migrated before ``/readyz`` says 200. The baseline, interleaved with it, is a
container of the same image that runs ``true`` (what Docker itself costs to
create, start and reap one), so the figure's share that is tapgate's shows.

    docker/build-base && pip wheel -w wheelhouse . && docker build -t tapgate .
    .venv/bin/python benchmarks/bench_container.py [--image tapgate] [--runs 5]

Exits 1 when the image is 250 MB or more, or the median cold start is 3 s or more.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from _util import QUICK_HELP, verdict

MAX_BYTES = 250_000_000
MAX_READY_S = 3.0
CONFIG = Path(__file__).resolve().parents[1] / "examples" / "docker" / "tapgate.yaml"


def docker(*argv: str) -> str:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, check=True).stdout


def baseline(image: str) -> float:
    """Seconds for ``docker run --rm`` of a container that only runs ``true``."""
    start = time.perf_counter()
    docker("run", "--rm", "--entrypoint", "true", image)
    return time.perf_counter() - start


def cold_start(image: str, n: int) -> float:
    """Seconds from ``docker run`` to ``/readyz`` 200, on a fresh volume."""
    name, volume = f"tapgate-bench-{os.getpid()}-{n}", f"tapgate-bench-{os.getpid()}-{n}"
    start = time.perf_counter()
    docker(
        "run", "--detach", "--name", name,
        "--env", "TAPGATE_AGENT_TOKEN=bench-token-0123456789",
        "--volume", f"{CONFIG}:/etc/tapgate/tapgate.yaml:ro",
        "--volume", f"{volume}:/var/lib/tapgate",
        "--publish", "127.0.0.1::8080", image,
    )  # fmt: skip
    try:
        port = docker("port", name, "8080/tcp").splitlines()[0].rsplit(":", 1)[1]
        url = f"http://127.0.0.1:{port}/readyz"
        while time.perf_counter() - start < 60:
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.02)
        raise SystemExit(f"{image} never answered /readyz")
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True, check=False)
        subprocess.run(["docker", "volume", "rm", volume], capture_output=True, check=False)


def spread(samples: list[float]) -> str:
    middle, low, high = statistics.median(samples), min(samples), max(samples)
    return f"median {middle:.2f} s (min {low:.2f}, max {high:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="tapgate")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    size = int(docker("image", "inspect", "--format", "{{.Size}}", args.image))
    layers = json.loads(
        docker("image", "inspect", "--format", "{{json .RootFS.Layers}}", args.image)
    )
    ready, floor = [], []
    for n in range(args.runs):  # interleaved, so load changes hit both alike
        floor.append(baseline(args.image))
        ready.append(cold_start(args.image, n))
    load = os.getloadavg()[0]
    print(f"image {args.image}: {size / 1e6:.0f} MB in {len(layers)} layers (target < 250 MB)")
    print(f"cold container to /readyz: {spread(ready)} over {args.runs} runs (target < 3 s)")
    print(f"docker run of `true` (baseline): {spread(floor)}; load average {load:.1f}")
    return verdict(size < MAX_BYTES and statistics.median(ready) < MAX_READY_S, quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
