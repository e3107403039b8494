"""Durable storage over SQLAlchemy Core: SQLite by default, PostgreSQL for replicas."""

from tapgate.core.store.engine import normalize_url
from tapgate.core.store.grants import GrantKey
from tapgate.core.store.lifecycle import Created, Transition
from tapgate.core.store.outbox import Outbox, OutboxItem
from tapgate.core.store.store import Store

__all__ = [
    "Created",
    "GrantKey",
    "Outbox",
    "OutboxItem",
    "Store",
    "Transition",
    "normalize_url",
]
