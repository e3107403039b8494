"""Durable storage over SQLAlchemy Core: SQLite by default, PostgreSQL for replicas."""

from tapgate.store.engine import normalize_url
from tapgate.store.grants import GrantKey
from tapgate.store.lifecycle import Created, Transition
from tapgate.store.outbox import Outbox, OutboxItem
from tapgate.store.store import Store

__all__ = [
    "Created",
    "GrantKey",
    "Outbox",
    "OutboxItem",
    "Store",
    "Transition",
    "normalize_url",
]
