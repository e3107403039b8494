"""Batches, approvals consumed once, and the decided-since cursor.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24

- ``requests.batch_id`` groups the asks of one batch; ``batches`` keeps the
  batch itself (the agent's calls in order, with the ones decided at once).
- ``requests.consumed_at``: a once-approval authorises one execution; the
  agent's first read of it consumes it (decision 0012-an-approval-authorises-one-execution).
- ``requests.decided_seq`` and the one-row ``decision_seq`` table: decisions
  numbered in commit order, so an agent can read "decided since my cursor"
  without skipping one committed late. Requests decided before this
  migration are numbered once here, oldest first.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("requests", sa.Column("batch_id", sa.String(32)))
    op.add_column("requests", sa.Column("consumed_at", UTCDateTime))
    op.add_column("requests", sa.Column("decided_seq", sa.Integer))
    op.create_index("ix_requests_batch_id", "requests", ["batch_id"])
    op.create_index("ix_requests_agent_decided_seq", "requests", ["agent", "decided_seq"])
    op.create_index("ix_requests_call", "requests", ["agent", "tool", "args_digest"])
    op.create_table(
        "batches",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("agent", sa.String(200), nullable=False),
        sa.Column("session", sa.String(200), nullable=False, server_default=""),
        sa.Column("items", sa.Text, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    op.create_table(
        "decision_seq",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
    )
    bind = op.get_bind()
    decided = bind.execute(
        sa.text("SELECT id FROM requests WHERE status <> 'pending' ORDER BY resolved_at, id")
    ).scalars()
    n = 0
    for n, request_id in enumerate(decided, start=1):
        bind.execute(
            sa.text("UPDATE requests SET decided_seq = :n WHERE id = :id"),
            {"n": n, "id": request_id},
        )
    bind.execute(sa.text("INSERT INTO decision_seq (id, n) VALUES (1, :n)"), {"n": n})


def downgrade() -> None:
    op.drop_table("decision_seq")
    op.drop_table("batches")
    op.drop_index("ix_requests_call", "requests")
    op.drop_index("ix_requests_agent_decided_seq", "requests")
    op.drop_index("ix_requests_batch_id", "requests")
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("decided_seq")
        batch.drop_column("consumed_at")
        batch.drop_column("batch_id")
