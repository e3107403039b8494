"""The webhook inbox: verified taps stored before the 200, so a crash cannot lose one.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27

``webhook_inbox`` holds each verified webhook event that may decide something
(a Slack tap or modal submission, a LINE postback or typed answer) from just
before the platform gets its 200 until the transaction that applies it, which
deletes the row beside remembering the event id in ``webhook_events``. A row
still here after a crash is replayed at start-up (decision 0017-record-before-acknowledge).
``attempts`` counts replays, so an event that can never be applied stops
being retried.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_inbox",
        sa.Column("source", sa.String(16), primary_key=True),
        sa.Column("event_id", sa.String(100), primary_key=True),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("received_at", UTCDateTime, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_webhook_inbox_received_at", "webhook_inbox", ["received_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_inbox_received_at", "webhook_inbox")
    op.drop_table("webhook_inbox")
