"""The test processes' shared compiled-statement cache (tests/sql_cache.py) reuses, never mixes."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert, select
from sqlalchemy.engine import Engine

from tests.sql_cache import SharedCompiledCache

ROWS = Table("rows", MetaData(), Column("id", Integer, primary_key=True), Column("name", String))


def engine_with(path: Path, name: str, cache: SharedCompiledCache) -> Engine:
    engine = create_engine(f"sqlite:///{path}", execution_options={"compiled_cache": cache})
    with engine.begin() as conn:
        ROWS.create(conn)
        conn.execute(insert(ROWS).values(id=1, name=name))
    return engine


def test_a_statement_compiled_for_one_engine_is_reused_by_the_next(tmp_path: Path) -> None:
    cache = SharedCompiledCache()
    first = engine_with(tmp_path / "a.db", "alpha", cache)
    second = engine_with(tmp_path / "b.db", "beta", cache)
    query = select(ROWS.c.name).where(ROWS.c.id == 1)
    try:
        with first.connect() as conn:
            result = conn.execute(query)
            assert result.context.cache_hit == first.dialect.CACHE_MISS
            assert result.scalar() == "alpha"
        with second.connect() as conn:
            result = conn.execute(query)
            assert result.context.cache_hit == second.dialect.CACHE_HIT
            assert result.scalar() == "beta"  # each engine still reads its own database
    finally:
        first.dispose()
        second.dispose()


def test_dialects_that_differ_in_a_setting_compile_apart(tmp_path: Path) -> None:
    cache = SharedCompiledCache()
    first = engine_with(tmp_path / "a.db", "alpha", cache)
    second = create_engine(f"sqlite:///{tmp_path / 'b.db'}")
    second.dialect.paramstyle = "named"  # as a different driver would compile
    try:
        with first.connect():
            pass
        key = (first.dialect, "statement")
        assert cache._key(key) == key
        assert cache._key((second.dialect, "statement"))[0] is second.dialect
    finally:
        first.dispose()
        second.dispose()
