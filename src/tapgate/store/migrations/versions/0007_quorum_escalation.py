"""Quorum, separation of duties, repeated reminders and escalation.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27

- ``approvals``: one row per (request, approver) of a request with a quorum;
  the primary key makes a second tap by the same person count once, and the
  count of rows, read under the request's row lock, completes the quorum in
  the one compare-and-set that decides (decision 0015-quorum-rows).
- ``requests.quorum`` / ``owner``: the terms the request was asked with, so
  every replica judges a tap by the same terms whatever the config says now.
- ``requests.approvals``: who approved so far, for the cards (the rows decide).
- ``requests.remind_every`` / ``remind_at``: the next reminder, moved forward
  by a compare-and-set, so each reminder is queued once across replicas.
- ``requests.escalate_at`` / ``escalate_to`` / ``escalated_at``: escalation,
  done once by a compare-and-set on ``escalated_at``.

Existing requests keep quorum 1, no owner and no reminders or escalation.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("quorum", sa.Integer, nullable=False, server_default="1"))
        batch.add_column(sa.Column("owner", sa.String(200)))
        batch.add_column(sa.Column("approvals", sa.Text))
        batch.add_column(sa.Column("remind_every", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("remind_at", UTCDateTime))
        batch.add_column(sa.Column("escalate_at", UTCDateTime))
        batch.add_column(sa.Column("escalate_to", sa.Text))
        batch.add_column(sa.Column("escalated_at", UTCDateTime))
    op.create_index("ix_requests_status_remind_at", "requests", ["status", "remind_at"])
    op.create_index("ix_requests_status_escalate_at", "requests", ["status", "escalate_at"])
    op.create_table(
        "approvals",
        sa.Column(
            "request_id",
            sa.String(32),
            sa.ForeignKey("requests.id", name="fk_approvals_request_id_requests"),
            nullable=False,
        ),
        sa.Column("approver", sa.String(200), nullable=False),
        sa.Column("approved_at", UTCDateTime, nullable=False),
        sa.Column("detail", sa.Text),
        sa.PrimaryKeyConstraint("request_id", "approver", name="pk_approvals"),
    )


def downgrade() -> None:
    op.drop_table("approvals")
    op.drop_index("ix_requests_status_escalate_at", "requests")
    op.drop_index("ix_requests_status_remind_at", "requests")
    with op.batch_alter_table("requests") as batch:
        for column in (
            "escalated_at",
            "escalate_to",
            "escalate_at",
            "remind_at",
            "remind_every",
            "approvals",
            "owner",
            "quorum",
        ):
            batch.drop_column(column)
