"""Core statements compiled once per dialect and run straight on the DBAPI cursor.

Why: every ``Connection.execute`` of a Core statement pays for a cache key,
an execution context and result metadata: about 65 µs per statement on the
benchmark machine, several times what SQLite itself spends on a point
``UPDATE`` or ``INSERT``. A tap's transaction (remember the webhook event,
compare-and-set the request) runs on every tap, so it pays that twice per
tap, the largest single cost of a tap (docs/benchmarks.md).

A :class:`Prepared` statement is still written in SQLAlchemy Core and still
compiled by SQLAlchemy for the connection's dialect, so the SQL is the same
as ``conn.execute`` would send, on SQLite and PostgreSQL alike. What it
skips is the per-call machinery: the compiled SQL, the order of positional
parameters, literal values, and the types' bind and result processors are
looked up once per dialect, through the types' public
``dialect_impl().bind_processor()`` / ``result_processor()``. It runs inside
the caller's transaction on the connection's own DBAPI cursor.

Use it for statements on a hot path whose parameters are plain names
(``bindparam("b_id")``) and whose columns' result processors need no DBAPI
type code (strings, integers, booleans, datetimes: not ``Numeric`` on
asyncpg); anything else reads better through ``conn.execute``. What it does
not inherit: SQLAlchemy's asyncpg statement-cache invalidation after a live
schema change (tapgate migrates before it serves).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, exc
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import UpdateBase

__all__ = ["Prepared"]

_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class _Compiled:
    """One statement as one dialect runs it."""

    sql: str
    names: tuple[str, ...]  # parameter names, in the order the DBAPI wants them
    positional: bool
    literals: Mapping[str, Any]  # values fixed in the statement (``status == "pending"``)
    binders: Mapping[str, Callable[[Any], Any]]
    columns: tuple[str, ...]  # RETURNING columns
    readers: tuple[_Processor, ...]


class Prepared:
    """A Core INSERT / UPDATE / DELETE (optionally RETURNING) run on the raw cursor.

    A driver error is raised as SQLAlchemy's own ``DBAPIError`` subclass (what
    ``conn.execute`` raises, so callers that map a lost database to a 503 see
    no difference), and a disconnect invalidates the connection, as
    SQLAlchemy would, so the pool does not hand it out again.
    """

    def __init__(self, statement: UpdateBase) -> None:
        self.statement = statement
        self._by_dialect: dict[tuple[str, str, str], _Compiled] = {}
        self._lock = threading.Lock()

    def rowcount(self, conn: Connection, params: Mapping[str, Any]) -> int:
        """Execute; the number of rows the statement touched."""
        count, _ = self._run(conn, params, fetch=False)
        return count

    def returning(self, conn: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Execute; the RETURNING rows as dicts of processed values (datetimes, booleans)."""
        compiled = self._compiled(conn.dialect)
        _, raw = self._run(conn, params, fetch=True)
        readers = compiled.readers
        return [
            {
                name: reader(value) if reader is not None else value
                for name, reader, value in zip(compiled.columns, readers, row, strict=True)
            }
            for row in raw
        ]

    def _run(
        self, conn: Connection, params: Mapping[str, Any], *, fetch: bool
    ) -> tuple[int, list[Sequence[Any]]]:
        dialect = conn.dialect
        compiled = self._compiled(dialect)
        bound = _bound(compiled, params)
        dbapi = conn.connection.dbapi_connection
        cursor = conn.connection.cursor()
        try:
            cursor.execute(compiled.sql, bound)
            return int(cursor.rowcount), (list(cursor.fetchall()) if fetch else [])
        except dialect.loaded_dbapi.Error as error:
            lost = dialect.is_disconnect(error, dbapi, cursor)
            if lost:
                conn.invalidate(error)
            raise exc.DBAPIError.instance(
                compiled.sql,
                bound,
                error,
                dialect.loaded_dbapi.Error,
                hide_parameters=True,  # arguments and approver names stay out of logs
                connection_invalidated=lost,
                dialect=dialect,
            ) from error
        finally:
            if not conn.invalidated:
                cursor.close()

    def _compiled(self, dialect: Dialect) -> _Compiled:
        # Keyed by driver and parameter style too: the same database through
        # another driver needs other SQL ($1 vs ? vs %(name)s).
        key = (dialect.name, dialect.driver, dialect.paramstyle)
        found = self._by_dialect.get(key)
        if found is None:
            with self._lock:
                found = self._by_dialect.get(key) or _compile(self.statement, dialect)
                self._by_dialect[key] = found
        return found


def _compile(statement: UpdateBase, dialect: Dialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    binds = compiled.binds
    order: Sequence[str] = (
        compiled.positiontup if compiled.positional and compiled.positiontup else list(binds)
    )
    literals: dict[str, Any] = {}
    binders: dict[str, Callable[[Any], Any]] = {}
    for name in dict.fromkeys(order):
        bind = binds[name]
        if bind.callable is not None or bind.expanding:
            raise ValueError(f"{name}: only plain bound parameters can be prepared")
        if not bind.required:
            literals[name] = bind.value
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            binders[name] = processor
    returned = list(statement.exported_columns)  # empty without RETURNING
    return _Compiled(
        sql=compiled.string,
        names=tuple(order),
        positional=bool(compiled.positional),
        literals=literals,
        binders=binders,
        columns=tuple(column.name for column in returned),
        readers=tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in returned
        ),
    )


def _bound(compiled: _Compiled, params: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
    """The parameters in the DBAPI's style, each through its type's bind processor."""
    values: dict[str, Any] = {}
    for name in compiled.names:
        if name in values:
            continue
        value = compiled.literals[name] if name in compiled.literals else params[name]
        binder = compiled.binders.get(name)
        values[name] = binder(value) if binder is not None else value
    if compiled.positional:
        return [values[name] for name in compiled.names]
    return values
