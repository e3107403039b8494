"""Docker for the container tests: is an engine there, and the images they run.

The images are built as a site without registry access builds them: the base
by ``docker/build-base`` (debootstrap, then ``docker import``; slow, so built
once per machine and reused while its tag exists), tapgate's image from a
wheelhouse made by ``pip wheel`` in a fresh build context, and PostgreSQL's
from ``docker/postgres.Dockerfile`` on the same base.

Without Docker (or debootstrap, or a compose command) the tests skip, and
fail instead when ``TAPGATE_REQUIRE_DOCKER`` is set (``.ci/run`` installs
Docker, starts its daemon and sets it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import aiohttp
import pytest

from tests.wheels import build_wheel

__all__ = [
    "BASE",
    "REPO",
    "build_image",
    "build_postgres_image",
    "compose_command",
    "docker",
    "docker_async",
    "ensure_base",
    "image_exists",
    "require",
    "run_async",
    "wait_ready",
]

REPO = Path(__file__).resolve().parents[2]
BASE = "tapgate-base:bookworm"


def require(what: str, problem: str | None) -> None:
    """Skip (or, under ``TAPGATE_REQUIRE_DOCKER``, fail) when ``problem`` says what is missing."""
    if problem is None:
        return
    message = f"{what}: {problem}"
    if os.environ.get("TAPGATE_REQUIRE_DOCKER"):
        pytest.fail(f"TAPGATE_REQUIRE_DOCKER is set but {message}")
    pytest.skip(message)


def docker_problem() -> str | None:
    """Why no Docker engine can be used here (the client's own words), or ``None``."""
    if shutil.which("docker") is None:
        return "the docker command is not installed"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return (info.stderr.strip() or info.stdout.strip()).splitlines()[-1]
    return None


def docker(*argv: str, timeout: float = 600, check: bool = True) -> str:
    """Run ``docker ARGV`` and return its stdout; a failure shows the command's output."""
    done = subprocess.run(
        ["docker", *argv], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(argv)} -> {done.returncode}:\n{done.stderr}")
    return done.stdout


async def run_async(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """A command without blocking the event loop: its status, its stdout and stderr together."""
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def docker_async(*argv: str) -> tuple[int, str]:
    """``docker ARGV`` without blocking the event loop."""
    return await run_async(["docker", *argv])


def compose_command() -> list[str] | None:
    """``docker compose`` (v2) where the plugin is installed, else Debian's ``docker-compose``."""
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if v2.returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    return None if found is None else [found]


def image_exists(tag: str) -> bool:
    """Whether the engine has an image tagged ``tag``."""
    found = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    return found.returncode == 0


def ensure_base() -> None:
    """The debootstrapped base image, built by ``docker/build-base`` unless its tag exists."""
    if image_exists(BASE):
        return
    missing = None if shutil.which("debootstrap") else "debootstrap is missing"
    if missing is None and os.geteuid() != 0:
        missing = f"debootstrap needs root (or build {BASE} once with sudo docker/build-base)"
    require("the base image", missing)
    subprocess.run([str(REPO / "docker" / "build-base"), BASE], check=True, timeout=1800)


def build_image(context: Path, tag: str) -> None:
    """tapgate's image, offline: a context holding the Dockerfile and a fresh wheelhouse."""
    for name in ("Dockerfile", ".dockerignore"):
        shutil.copy(REPO / name, context / name)
    shutil.copytree(REPO / "docker", context / "docker")
    build_wheel(context / "wheelhouse", "--quiet")
    # --network none: the build must read nothing but the context.
    docker("build", "--quiet", "--network", "none", "-t", tag, str(context), timeout=1200)


def build_postgres_image(tag: str) -> None:
    """PostgreSQL on the same base, as compose.yaml's replica setup names it."""
    docker(
        "build", "--quiet", "-t", tag, "-f", str(REPO / "docker" / "postgres.Dockerfile"),
        str(REPO / "docker"), timeout=1200,
    )  # fmt: skip


async def wait_ready(url: str, timeout: float = 60) -> None:
    """Until ``url/readyz`` answers 200 (a container's published port opens before the app)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aiohttp.ClientSession() as session:
        while loop.time() < deadline:
            try:
                async with session.get(url + "/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"{url}/readyz never answered 200")
