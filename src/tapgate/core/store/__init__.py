"""Durable storage over SQLAlchemy Core: SQLite by default, PostgreSQL for replicas."""

from tapgate.core.store.engine import normalize_url
from tapgate.core.store.store import Created, Store, Transition

__all__ = ["Created", "Store", "Transition", "normalize_url"]
