"""Session fixtures of the container tests: an engine, the base, and the images built once.

Built once per run, not once per process: ``--dist worksteal`` can share
the container tests out between two workers, and each then built the same
image (~40 s of a second worker, seen pushing the suite past its budget).
The processes of a run agree through a lock file in the run's temporary
folder: the first to need an image builds it while holding the lock, the
others wait for it and find it built; tapgate's image is removed by the last
process that used it (a count kept under the same lock).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.container.docker import (
    build_image,
    build_postgres_image,
    compose_command,
    docker,
    docker_problem,
    ensure_base,
    image_exists,
    require,
)
from tests.locks import exclusive

IMAGE = "tapgate:container-test"
"""The tag of tapgate's image; this run's carries the run's id (below)."""
POSTGRES_IMAGE = "tapgate-postgres:container-test"


@pytest.fixture(scope="session")
def engine(run_folder: Path) -> None:
    """A Docker engine answers, and the debootstrapped base image exists (built if not)."""
    require("Docker", docker_problem())
    with exclusive(run_folder / "docker.lock"):  # one debootstrap, on a fresh machine
        ensure_base()


@pytest.fixture(scope="session")
def image(
    engine: None, run_folder: Path, testrun_uid: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """tapgate's image, built offline from a wheelhouse of this checkout, once per run."""
    tag = f"{IMAGE}-{testrun_uid[:12]}"
    users = run_folder / "image-users"
    with exclusive(run_folder / "docker.lock"):
        if not image_exists(tag):
            build_image(tmp_path_factory.mktemp("context"), tag)
        users.write_text(str(_count(users) + 1))
    yield tag
    with exclusive(run_folder / "docker.lock"):
        left = _count(users) - 1
        users.write_text(str(left))
        if left == 0:
            docker("image", "rm", "--force", tag, check=False)


def _count(path: Path) -> int:
    return int(path.read_text()) if path.exists() else 0


@pytest.fixture(scope="session")
def postgres_image(engine: None, run_folder: Path) -> str:
    """The local PostgreSQL image compose.yaml's replicas use (kept: it rarely changes).

    Built by every process that needs it, one at a time: the engine's layer
    cache makes a second build of an unchanged Dockerfile take a moment.
    """
    with exclusive(run_folder / "docker.lock"):
        build_postgres_image(POSTGRES_IMAGE)
    return POSTGRES_IMAGE


@pytest.fixture(scope="session")
def compose(engine: None) -> list[str]:
    """The compose command: ``docker compose`` or Debian's ``docker-compose``."""
    command = compose_command()
    require("compose", None if command else "neither docker compose nor docker-compose is there")
    assert command is not None
    return command


@pytest.fixture
def volume(engine: None, tmp_path: Path) -> Iterator[str]:
    """A named volume for ``/var/lib/tapgate``, removed afterwards."""
    name = f"tapgate-test-{tmp_path.name}".lower()
    docker("volume", "create", name)
    yield name
    docker("volume", "rm", "--force", name, check=False)
