"""Fixtures shared by the client tests."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for ``localhost`` (openssl), and its key.

    Skipped where openssl is missing, failed instead when
    ``TAPGATE_REQUIRE_OPENSSL`` is set (``.ci/run`` installs it and sets it).
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        if os.environ.get("TAPGATE_REQUIRE_OPENSSL"):
            pytest.fail("TAPGATE_REQUIRE_OPENSSL is set but openssl is not installed")
        pytest.skip("openssl is not installed")
    where = tmp_path_factory.mktemp("tls")
    cert, key = str(where / "cert.pem"), str(where / "key.pem")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
         "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key
