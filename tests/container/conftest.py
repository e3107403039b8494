"""Session fixtures of the container tests: an engine, the base, and the images built once."""

from __future__ import annotations

import os
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
    require,
)

IMAGE = "tapgate:container-test"
"""The tag of this process's image; a pytest-xdist worker's carries its name (below)."""
POSTGRES_IMAGE = "tapgate-postgres:container-test"


@pytest.fixture(scope="session")
def engine() -> None:
    """A Docker engine answers, and the debootstrapped base image exists (built if not)."""
    require("Docker", docker_problem())
    ensure_base()


@pytest.fixture(scope="session")
def image(engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """tapgate's image, built offline from a wheelhouse of this checkout.

    Tagged per worker: when the container tests are shared out between two
    workers, each builds its own, and neither removes the other's at its end.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    tag = f"{IMAGE}-{worker}" if worker else IMAGE
    build_image(tmp_path_factory.mktemp("context"), tag)
    yield tag
    docker("image", "rm", "--force", tag, check=False)


@pytest.fixture(scope="session")
def postgres_image(engine: None) -> str:
    """The local PostgreSQL image compose.yaml's replicas use (kept: it rarely changes)."""
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
