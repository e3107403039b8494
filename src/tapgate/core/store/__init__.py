"""Durable storage over SQLAlchemy Core: SQLite by default, PostgreSQL for replicas."""

from tapgate.core.store.engine import normalize_url
from tapgate.core.store.outbox import Outbox, OutboxItem
from tapgate.core.store.store import Created, GrantKey, Store, Transition

__all__ = [
    "Created",
    "GrantKey",
    "Outbox",
    "OutboxItem",
    "Store",
    "Transition",
    "normalize_url",
]
