"""Durable storage over SQLAlchemy Core: SQLite by default, PostgreSQL for replicas."""

from tapgate.core.store.engine import normalize_url
from tapgate.core.store.store import Created, GrantKey, Store, Transition

__all__ = ["Created", "GrantKey", "Store", "Transition", "normalize_url"]
