"""Initial schema: requests, outbox, grants, append-only audit log, client-named calls.

Revision ID: 0001
Revises:
Create Date: 2026-11-21

Migrations are frozen snapshots: this file spells out its DDL instead of
importing ``schema.py``, so later changes to the tables cannot change what an
old revision meant.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_table(
        "requests",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("agent", sa.String(200), nullable=False),
        sa.Column("session", sa.String(200), nullable=False, server_default=""),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("arguments", sa.Text, nullable=False),
        sa.Column("args_digest", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("risk", sa.String(16), nullable=False),
        sa.Column("rule", sa.String(300), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("approvers", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("on_timeout", sa.String(8), nullable=False),
        sa.Column("grantable", sa.Boolean, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
        sa.Column("resolved_at", UTCDateTime),
        sa.Column("resolved_by", sa.String(200)),
        sa.Column("resolution_reason", sa.Text),
        sa.Column("resolution_detail", sa.Text),
        sa.Column("scope", sa.String(16)),
        sa.Column("reminded_at", UTCDateTime),
        sa.CheckConstraint(
            "status IN ('pending', 'approved', 'denied', 'expired', 'cancelled')",
            name="ck_requests_status",
        ),
    )
    op.create_index("ix_requests_status_expires_at", "requests", ["status", "expires_at"])
    op.create_index(
        "uq_requests_pending_call",
        "requests",
        ["agent", "session", "tool", "args_digest"],
        unique=True,
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.String(32), sa.ForeignKey("requests.id"), nullable=False),
        sa.Column("approver", sa.String(200), nullable=False),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("address", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False, server_default="request"),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", UTCDateTime, nullable=False),
        sa.Column("lease_until", UTCDateTime),
        sa.Column("lease_owner", sa.String(100)),
        sa.Column("last_error", sa.Text),
        sa.Column("receipt", sa.Text),
        sa.Column("retry_key", sa.String(36), nullable=False),
        sa.Column("updated_status", sa.String(16)),
        sa.Column("update_attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("update_error", sa.Text),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'sent', 'failed', 'cancelled')", name="ck_outbox_status"
        ),
    )
    op.create_index("ix_outbox_status_next_attempt_at", "outbox", ["status", "next_attempt_at"])
    op.create_index("ix_outbox_request_id", "outbox", ["request_id"])
    to_update = sa.text("status = 'sent' AND updated_status IS NULL")
    op.create_index(
        "ix_outbox_to_update",
        "outbox",
        ["request_id"],
        sqlite_where=to_update,
        postgresql_where=to_update,
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("agent", sa.String(200), nullable=False),
        sa.Column("session", sa.String(200), nullable=False, server_default=""),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("expires_at", UTCDateTime),
        sa.Column("request_id", sa.String(32)),
        sa.Column("revoked_at", UTCDateTime),
        sa.Column("revoked_by", sa.String(200)),
        sa.CheckConstraint("scope IN ('session', 'always')", name="ck_grants_scope"),
    )
    op.create_index("ix_grants_agent_tool", "grants", ["agent", "tool"])
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("request_id", sa.String(32)),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_table(
        "webhook_events",
        sa.Column("source", sa.String(16), primary_key=True),
        sa.Column("event_id", sa.String(100), primary_key=True),
        sa.Column("received_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_webhook_events_received_at", "webhook_events", ["received_at"])
    op.create_table(
        "client_calls",
        sa.Column("agent", sa.String(200), primary_key=True),
        sa.Column("call_id", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("request_id", sa.String(32), sa.ForeignKey("requests.id")),
        sa.Column("decision", sa.Text),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.CheckConstraint(
            "(request_id IS NULL) <> (decision IS NULL)", name="ck_client_calls_one_answer"
        ),
    )
    op.create_index("ix_audit_request_id", "audit", ["request_id"])
    op.create_index("ix_audit_at", "audit", ["at"])
    _append_only_audit()
    _audit_transitions()


_SQLITE_AUDIT_TRIGGERS = (
    """CREATE TRIGGER requests_audit_insert AFTER INSERT ON requests
    BEGIN
        INSERT INTO audit (at, event, request_id, actor, detail)
        VALUES (NEW.created_at, 'requested', NEW.id, NEW.agent, json_object(
            'tool', NEW.tool, 'rule', NEW.rule, 'approvers', json(NEW.approvers),
            'expires_at', NEW.expires_at));
    END""",
    """CREATE TRIGGER requests_audit_decision AFTER UPDATE OF status ON requests
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending'
    BEGIN
        INSERT INTO audit (at, event, request_id, actor, detail)
        VALUES (NEW.resolved_at, NEW.status, NEW.id, NEW.resolved_by, json_patch(
            json_object('reason', NEW.resolution_reason, 'scope', NEW.scope),
            coalesce(NEW.resolution_detail, '{}')));
    END""",
)

_PG_AUDIT_FUNCTION = """
CREATE FUNCTION tapgate_audit_request() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit (at, event, request_id, actor, detail)
        VALUES (NEW.created_at, 'requested', NEW.id, NEW.agent, json_build_object(
            'tool', NEW.tool, 'rule', NEW.rule, 'approvers', NEW.approvers::json,
            'expires_at', NEW.expires_at)::text);
    ELSIF OLD.status = 'pending' AND NEW.status <> 'pending' THEN
        INSERT INTO audit (at, event, request_id, actor, detail)
        VALUES (NEW.resolved_at, NEW.status, NEW.id, NEW.resolved_by, (
            jsonb_strip_nulls(jsonb_build_object(
                'reason', NEW.resolution_reason, 'scope', NEW.scope))
            || coalesce(NEW.resolution_detail::jsonb, '{}'::jsonb))::text);
        -- Wake waiters on every replica; delivered when the transaction commits.
        PERFORM pg_notify('tapgate_decided', NEW.id);
    END IF;
    RETURN NEW;
END $$
"""


def _audit_transitions() -> None:
    """Every request creation and status change writes its audit line in the database.

    No code path (nor a hand-written UPDATE) can change a request without
    leaving evidence, and the hot path saves a statement per transition.
    """
    if op.get_context().dialect.name == "sqlite":
        for statement in _SQLITE_AUDIT_TRIGGERS:
            op.execute(statement)
        return
    op.execute(_PG_AUDIT_FUNCTION)
    op.execute(
        "CREATE TRIGGER requests_audit AFTER INSERT OR UPDATE OF status ON requests "
        "FOR EACH ROW EXECUTE FUNCTION tapgate_audit_request()"
    )


def _append_only_audit() -> None:
    """The audit log is evidence: the database itself refuses UPDATE and DELETE."""
    if op.get_context().dialect.name == "sqlite":
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER audit_no_{verb.lower()} BEFORE {verb} ON audit "
                "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END"
            )
        return
    op.execute(
        "CREATE FUNCTION tapgate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$"
    )
    op.execute(
        "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit "
        "FOR EACH ROW EXECUTE FUNCTION tapgate_audit_append_only()"
    )


def downgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        op.execute("DROP TRIGGER IF EXISTS requests_audit ON requests")
        op.execute("DROP FUNCTION IF EXISTS tapgate_audit_request()")
        op.execute("DROP TRIGGER IF EXISTS audit_append_only ON audit")
        op.execute("DROP FUNCTION IF EXISTS tapgate_audit_append_only()")
    for table in ("client_calls", "webhook_events", "audit", "grants", "outbox", "requests"):
        op.drop_table(table)
