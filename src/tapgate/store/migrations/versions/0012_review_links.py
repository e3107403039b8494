"""Review links: the single-use answer links a mailed approval request carries.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

``review_links`` holds one row per message that carries a link to a review
page: only the token's SHA-256, what it is for (a request, or a batch), whose
it is (the approver and the address it was sent to), the page's CSRF nonce,
the outbox row it was minted for (a retried send mints again), its end, and
when it was used to decide. ``review_outcomes`` records that one outcome
message went to an address for a request or batch, so reminders do not
multiply it.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_links",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("subject", sa.String(64), nullable=False),
        sa.Column("batch", sa.Boolean, nullable=False),
        sa.Column("approver", sa.String(200), nullable=False),
        sa.Column("address", sa.String(320), nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("outbox_key", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
        sa.Column("used_at", UTCDateTime),
    )
    op.create_index("ix_review_links_subject", "review_links", ["subject", "address"])
    op.create_index("ix_review_links_expires_at", "review_links", ["expires_at"])
    op.create_table(
        "review_outcomes",
        sa.Column("subject", sa.String(64), primary_key=True),
        sa.Column("address", sa.String(320), primary_key=True),
        sa.Column("sent_at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("review_outcomes")
    op.drop_index("ix_review_links_expires_at", "review_links")
    op.drop_index("ix_review_links_subject", "review_links")
    op.drop_table("review_links")
