"""Package names that load on first use (PEP 562), for tapgate's package ``__init__``s.

The agent side (``tapgate.client``, ``tapgate hook claude-code``, run on every
Claude Code tool call) needs the domain records but not the store, SQLAlchemy
or the chat SDKs; a server needs only the SDKs of the channels it enables. So
``tapgate``, ``tapgate.gate``, ``tapgate.policy`` and ``tapgate.server`` import
those names when first asked for, and keep their public ``__all__`` and, for
type checkers, their ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str], exported: Collection[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a name to its module.

    A name is imported once and then stored in the package, so later lookups
    are plain attribute reads.
    """
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(exported)

    return getattr_, dir_
