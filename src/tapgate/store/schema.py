"""The database schema, as SQLAlchemy Core tables, shared by SQLite and PostgreSQL.

The Alembic migrations in ``migrations/versions`` are the source of truth for
what is in a database; these tables describe the head revision for queries.
Times are stored as UTC (see :class:`UTCDateTime`) and compared with values
from the injected clock, never with the database's ``now()``, so expiry is
testable and identical on both backends.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.types import TypeDecorator

__all__ = [
    "UTCDateTime",
    "approvals",
    "audit",
    "batches",
    "channel_conversations",
    "client_calls",
    "decision_seq",
    "grants",
    "metadata",
    "outbox",
    "pending_reasons",
    "requests",
    "review_links",
    "review_outcomes",
    "web_sessions",
    "web_sign_ins",
    "webhook_events",
    "webhook_inbox",
]


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend.

    SQLite has no time zones: values are normalised to UTC before they are
    written and tagged UTC when read, so comparisons in SQL stay correct.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise ValueError("tapgate stores only timezone-aware datetimes")
        utc: datetime = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

REQUEST_STATUSES = "('pending', 'approved', 'denied', 'expired', 'cancelled')"

requests = Table(
    "requests",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("agent", String(200), nullable=False),
    # '' rather than NULL for "no session": NULLs are distinct in unique indexes.
    Column("session", String(200), nullable=False, server_default=""),
    Column("tool", String(200), nullable=False),
    Column("arguments", Text, nullable=False),
    Column("args_digest", String(64), nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("risk", String(16), nullable=False),
    Column("rule", String(300), nullable=False),
    Column("reason", Text, nullable=False),
    Column("approvers", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("on_timeout", String(8), nullable=False),
    Column("grantable", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("resolved_at", UTCDateTime),
    Column("resolved_by", String(200)),
    Column("resolution_reason", Text),
    Column("resolution_detail", Text),
    Column("scope", String(16)),
    Column("reminded_at", UTCDateTime),
    # Migration 0004: batches, approvals consumed once, the decided-since cursor.
    Column("batch_id", String(32)),
    Column("consumed_at", UTCDateTime),
    Column("decided_seq", Integer),
    # Migration 0007: quorum, separation of duties, repeated reminders, escalation.
    # ``approvals`` mirrors the ``approvals`` rows for the cards; the rows decide.
    Column("quorum", Integer, nullable=False, server_default="1"),
    Column("owner", String(200)),
    Column("approvals", Text),
    Column("remind_every", Integer, nullable=False, server_default="0"),  # whole seconds
    Column("remind_at", UTCDateTime),
    Column("escalate_at", UTCDateTime),
    Column("escalate_to", Text),
    Column("escalated_at", UTCDateTime),
    # Migration 0010: an approval's edited arguments (``core.edits``); such a
    # request's ``args_digest`` is then the edited call's, what the approval covers.
    Column("edited_arguments", Text),
    CheckConstraint(f"status IN {REQUEST_STATUSES}", name="status"),
    Index("ix_requests_status_expires_at", "status", "expires_at"),
    Index("ix_requests_batch_id", "batch_id"),
    Index("ix_requests_status_remind_at", "status", "remind_at"),
    Index("ix_requests_status_escalate_at", "status", "escalate_at"),
    Index("ix_requests_agent_decided_seq", "agent", "decided_seq"),
    # A re-issued call finds its earlier request (approved and unconsumed, or denied).
    Index("ix_requests_call", "agent", "tool", "args_digest"),
    # At most one pending request per identical call: the database, not a race
    # between two coroutines, decides whether an ask reuses a request.
    Index(
        "uq_requests_pending_call",
        "agent",
        "session",
        "tool",
        "args_digest",
        unique=True,
        sqlite_where=text("status = 'pending'"),
        postgresql_where=text("status = 'pending'"),
    ),
)

# One row per approval of a request with a quorum (migration 0007): the primary
# key makes a second tap by the same approver count once, and the count of rows
# (read under the request's row lock) is what completes the quorum.
approvals = Table(
    "approvals",
    metadata,
    Column("request_id", String(32), ForeignKey("requests.id"), primary_key=True),
    Column("approver", String(200), primary_key=True),
    Column("approved_at", UTCDateTime, nullable=False),
    Column("detail", Text),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("request_id", String(32), ForeignKey("requests.id"), nullable=False),
    Column("approver", String(200), nullable=False),
    Column("channel", String(32), nullable=False),
    Column("address", String(200), nullable=False),
    Column("kind", String(16), nullable=False, server_default="request"),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("lease_until", UTCDateTime),
    Column("lease_owner", String(100)),
    Column("last_error", Text),
    Column("receipt", Text),
    Column("retry_key", String(36), nullable=False),
    # The request status last shown on the platform (chat.update after a decision).
    Column("updated_status", String(16)),
    Column("update_attempts", Integer, nullable=False, server_default="0"),
    Column("update_error", Text),
    Column("next_update_at", UTCDateTime),  # after a failed update: not before (migration 0002)
    # Migration 0005: one card per batch. ``batch_id`` marks a row whose
    # message shows every call of the batch (``request_id`` is one member, for the
    # foreign key); ``shown_version`` is the ``batches.version`` the card last showed.
    Column("batch_id", String(32)),
    Column("shown_version", Integer),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint("status IN ('pending', 'sent', 'failed', 'cancelled')", name="status"),
    Index("ix_outbox_status_next_attempt_at", "status", "next_attempt_at"),
    Index("ix_outbox_request_id", "request_id"),
    Index("ix_outbox_batch_id", "batch_id"),
    # Sent messages still to be updated after a decision: small, whatever the history.
    Index(
        "ix_outbox_to_update",
        "request_id",
        sqlite_where=text("status = 'sent' AND updated_status IS NULL"),
        postgresql_where=text("status = 'sent' AND updated_status IS NULL"),
    ),
)

grants = Table(
    "grants",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("scope", String(16), nullable=False),
    Column("agent", String(200), nullable=False),
    Column("session", String(200), nullable=False, server_default=""),
    Column("tool", String(200), nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("expires_at", UTCDateTime),
    Column("request_id", String(32)),
    Column("revoked_at", UTCDateTime),
    Column("revoked_by", String(200)),
    # Migration 0009: calls a single-use (``always_uses``) grant may still allow.
    Column("uses_left", Integer),
    CheckConstraint("scope IN ('session', 'always')", name="scope"),
    Index("ix_grants_agent_tool", "agent", "tool"),
)

audit = Table(
    "audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False),
    Column("event", String(32), nullable=False),
    Column("request_id", String(32)),
    Column("actor", String(200), nullable=False),
    Column("detail", Text, nullable=False),
    # The hash chain (migration 0003, core/audit_chain.py): set by the database.
    Column("prev_hash", String(64)),
    Column("hash", String(64)),
    Index("ix_audit_request_id", "request_id"),
    Index("ix_audit_at", "at"),
)

# A batch of calls an agent submitted together (migration 0004): ``items`` is the
# JSON list, in the agent's order, of {"request_id": ...} for a call that asks
# and {"tool": ..., "decision": {...}} for one decided at once.
batches = Table(
    "batches",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("agent", String(200), nullable=False),
    Column("session", String(200), nullable=False, server_default=""),
    Column("items", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # Migration 0005: bumped by every decision of a member, in the
    # deciding transaction, so a card whose ``shown_version`` is lower is stale.
    Column("version", Integer, nullable=False, server_default="0"),
)

# One row: the last decision sequence number. A decision takes the row's lock
# until it commits, so sequence order is commit order (see lifecycle).
decision_seq = Table(
    "decision_seq",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
)

# Platform event ids already handled (LINE's webhookEventId is stable across
# redeliveries): a redelivered tap is recognised instead of processed twice.
webhook_events = Table(
    "webhook_events",
    metadata,
    Column("source", String(16), primary_key=True),
    Column("event_id", String(100), primary_key=True),
    Column("received_at", UTCDateTime, nullable=False),
    Index("ix_webhook_events_received_at", "received_at"),
)

# Verified webhook events stored before the platform gets its 200 (decision
# 0017-record-before-acknowledge), deleted in the transaction that applies them: what is here was
# acknowledged and not yet applied (migration 0006).
webhook_inbox = Table(
    "webhook_inbox",
    metadata,
    Column("source", String(16), primary_key=True),
    Column("event_id", String(100), primary_key=True),
    Column("payload", Text, nullable=False),
    Column("received_at", UTCDateTime, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Index("ix_webhook_inbox_received_at", "received_at"),
)

# Web inbox sign-in links (migration 0011): only the SHA-256 of a link's token
# is kept, so a database read does not hand out sign-ins; ``used_at`` makes a
# link single-use by one compare-and-set.
web_sign_ins = Table(
    "web_sign_ins",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("approver", String(200), nullable=False),
    Column("via", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("used_at", UTCDateTime),
    Index("ix_web_sign_ins_expires_at", "expires_at"),
)

# Web inbox sessions: the cookie's SHA-256, whose it is, its CSRF token, its
# end; ``id`` is what the approver's session list shows and revokes.
web_sessions = Table(
    "web_sessions",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("approver", String(200), nullable=False),
    Column("csrf", String(64), nullable=False),
    Column("via", String(16), nullable=False),
    Column("user_agent", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime),
    Index("ix_web_sessions_approver", "approver"),
)

# Review links (migration 0012): the answer links of mailed requests. Only the
# token's SHA-256 is kept; ``used_at`` makes a link decide once, by one
# compare-and-set; ``signed_in_at`` (0014) makes it sign in to the web inbox once.
# ``review_outcomes``: one outcome message per address.
review_links = Table(
    "review_links",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("subject", String(64), nullable=False),
    Column("batch", Boolean, nullable=False),
    Column("approver", String(200), nullable=False),
    Column("address", String(320), nullable=False),
    Column("csrf", String(64), nullable=False),
    Column("outbox_key", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("used_at", UTCDateTime),
    Column("signed_in_at", UTCDateTime),
    Index("ix_review_links_subject", "subject", "address"),
    Index("ix_review_links_expires_at", "expires_at"),
)
review_outcomes = Table(
    "review_outcomes",
    metadata,
    Column("subject", String(64), primary_key=True),
    Column("address", String(320), primary_key=True),
    Column("sent_at", UTCDateTime, nullable=False),
)

# What an approver types next on LINE after "Deny…" or a question's Reply: one row
# per approver at most, from the tap until the decision it ends in (migration 0008).
pending_reasons = Table(
    "pending_reasons",
    metadata,
    Column("approver", String(200), primary_key=True),
    Column("id", String(32), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("target", String(64), nullable=False),
    Column("channel", String(16), nullable=False),
    Column("user_id", String(200), nullable=False),
    Column("state", String(8), nullable=False),
    Column("text", Text),
    Column("asked_at", UTCDateTime, nullable=False),
    Column("deadline", UTCDateTime, nullable=False),
    Index("ix_pending_reasons_deadline", "deadline"),
    Index("ix_pending_reasons_target", "target"),
)

# Calls an agent named itself (HumanLayer's call_id): the body it sent, and
# either the request that follows the call or the decision made at once.
client_calls = Table(
    "client_calls",
    metadata,
    Column("agent", String(200), primary_key=True),
    Column("call_id", String(200), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("body", Text, nullable=False),
    Column("request_id", String(32), ForeignKey("requests.id")),
    Column("decision", Text),
    Column("created_at", UTCDateTime, nullable=False),
    CheckConstraint("(request_id IS NULL) <> (decision IS NULL)", name="one_answer"),
)


channel_conversations = Table(
    "channel_conversations",
    metadata,
    Column("channel", String(32), primary_key=True),
    Column("address", String(200), primary_key=True),
    Column("reference", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
