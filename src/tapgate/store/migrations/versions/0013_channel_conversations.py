"""Where a channel can reach an approver it learned about from the approver.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27

``channel_conversations`` holds, per channel and approver address, the
platform's reference to a conversation tapgate may post in (Teams: the
service URL, conversation id and tenant of the approver's 1:1 chat with the
bot, captured when they install the app or first message it). A bot cannot
start that conversation by a user id alone, so without a row the approver
is unreachable there.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "channel_conversations",
        sa.Column("channel", sa.String(32), primary_key=True),
        sa.Column("address", sa.String(200), primary_key=True),
        sa.Column("reference", sa.Text, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("channel_conversations")
