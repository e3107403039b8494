"""Outbox: when a failed message update may be tried again.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21

A failed ``chat.update`` was retried on the dispatcher's next pass, at once,
so a Slack outage of a minute (or one 429 with a long Retry-After) used up
every attempt and left decided requests with live buttons. The retry time
is now kept per row, like a delivery's ``next_attempt_at``.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("outbox", sa.Column("next_update_at", UTCDateTime))


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("next_update_at")
