"""Reasons on LINE: what an approver types after "Deny…" (or a question's Reply).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24

``pending_reasons`` holds, per approver, the one request waiting for their
typed text: from the Deny… tap (stored with the tap's event id in one
transaction) until the decision it ends in, which the text, a tap elsewhere
or the window's end (the heartbeat's leader) makes. Being a row, it survives
a restart and is seen by every replica; ``state`` (``waiting`` → ``typed`` or
``lapsed``) is changed by compare-and-set, so whether the deny carries the
typed reason is decided once. While a ``deny`` row exists its request, if it
expires first, expires with the verdict deny whatever its ``on_timeout``.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pending_reasons",
        sa.Column("approver", sa.String(200), primary_key=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target", sa.String(64), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("text", sa.Text),
        sa.Column("asked_at", UTCDateTime, nullable=False),
        sa.Column("deadline", UTCDateTime, nullable=False),
    )
    op.create_index("ix_pending_reasons_deadline", "pending_reasons", ["deadline"])
    op.create_index("ix_pending_reasons_target", "pending_reasons", ["target"])


def downgrade() -> None:
    op.drop_index("ix_pending_reasons_target", "pending_reasons")
    op.drop_index("ix_pending_reasons_deadline", "pending_reasons")
    op.drop_table("pending_reasons")
