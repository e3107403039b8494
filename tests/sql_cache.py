"""One compiled-statement cache per test process, shared by every engine it opens.

SQLAlchemy compiles a Core statement once per engine: the compiled cache
belongs to the engine, and its keys start with the engine's dialect object.
A server opens one engine for its life, so it compiles each statement once;
a test process opens a fresh store, so a fresh engine, for nearly every
test, and compiled the same statements again in each: 17,800 compiles and
about 11 s of CPU in the inner loop's 100 (the outbox's wide select alone
1,840 times at ~2 ms each, measured with a hook timing the compiler).

:func:`share_compiled_statements` hands every connection the process's one
cache through SQLAlchemy's public ``compiled_cache`` execution option.
:class:`SharedCompiledCache` puts in each key's first place the first
dialect seen with the same class and the same settings (every plain value
the dialect holds: server version, parameter style, feature flags), so a
statement compiled for one test's SQLite engine is found by the next one's,
and a PostgreSQL server of another version would get its own. The SQL sent
is what each engine would have compiled itself; each connection still runs
it with its own dialect and DBAPI connection.
"""

from __future__ import annotations

import threading
import weakref
from types import ModuleType
from typing import Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine import Dialect
from sqlalchemy.util import LRUCache

__all__ = ["SharedCompiledCache", "share_compiled_statements"]

_PLAIN = (str, int, float, bool, tuple, ModuleType, type(None))


def _settings(dialect: Dialect) -> tuple[Any, ...]:
    """What makes two dialects compile alike: their class and every plain value they hold."""
    plain = sorted((k, v) for k, v in vars(dialect).items() if isinstance(v, _PLAIN))
    return (type(dialect), tuple(plain))


class SharedCompiledCache:
    """SQLAlchemy's compiled cache, keyed by a dialect's settings rather than its identity."""

    def __init__(self, size: int = 4000) -> None:
        self._compiled: LRUCache[Any, Any] = LRUCache(size)
        self._firsts: dict[tuple[Any, ...], Dialect] = {}
        self._seen: weakref.WeakKeyDictionary[Dialect, Dialect] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # stores run their SQL on their own threads

    def _key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """``key`` with its dialect replaced by the first one seen with the same settings.

        A dialect's settings are read once, at its first statement: by then
        its engine has connected and ``initialize`` has filled them in.
        """
        dialect = key[0]
        with self._lock:
            first = self._seen.get(dialect)
            if first is None:
                first = self._seen[dialect] = self._firsts.setdefault(_settings(dialect), dialect)
        return (first, *key[1:])

    def get(self, key: tuple[Any, ...], default: Any = None) -> Any:
        return self._compiled.get(self._key(key), default)

    def __setitem__(self, key: tuple[Any, ...], value: Any) -> None:
        self._compiled[self._key(key)] = value

    def __len__(self) -> int:
        return len(self._compiled)


_CACHE = SharedCompiledCache()


def _share(connection: Connection) -> None:
    connection.execution_options(compiled_cache=_CACHE)


def share_compiled_statements() -> None:
    """From now on, every engine's connections in this process use :data:`_CACHE`."""
    if not event.contains(Engine, "engine_connect", _share):
        event.listen(Engine, "engine_connect", _share)
