"""One card per batch: outbox rows that show a whole batch, and the batch's version.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26

- ``outbox.batch_id``: a row that delivers the batch's card (one per approver
  × channel) instead of one request's message; ``request_id`` still names one
  member, so the foreign key and the lease queries stay as they are.
- ``outbox.shown_version``: the ``batches.version`` the card last showed.
- ``batches.version``: bumped in the transaction of every member's decision;
  a card with a lower ``shown_version`` is brought up to date once, however
  many decisions came in between (one ``chat.update`` per decision wave).
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("batch_id", sa.String(32)))
        batch.add_column(sa.Column("shown_version", sa.Integer))
    op.create_index("ix_outbox_batch_id", "outbox", ["batch_id"])
    with op.batch_alter_table("batches") as batch:
        batch.add_column(sa.Column("version", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("batches") as batch:
        batch.drop_column("version")
    op.drop_index("ix_outbox_batch_id", "outbox")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("shown_version")
        batch.drop_column("batch_id")
