"""The framework adapters, each against its real framework package and that framework's test model.

Every test module starts with :func:`require`: a framework that is not
installed skips its module, unless ``TAPGATE_REQUIRE_INTEGRATIONS=1`` (CI
sets it), where a missing framework is an import error, so a broken install
can never pass as a row of skips.
"""

from __future__ import annotations

import importlib
import os

import pytest


def require(module: str) -> None:
    """Skip the calling test module when ``module`` is absent, or fail in CI."""
    if os.environ.get("TAPGATE_REQUIRE_INTEGRATIONS") == "1":
        importlib.import_module(module)
    else:
        pytest.importorskip(module)
