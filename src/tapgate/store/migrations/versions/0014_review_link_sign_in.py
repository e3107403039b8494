"""Review links sign in once: when a review link opened a web inbox session.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-08

The review page a mail links to offers one button that signs its approver
in to the web inbox. ``review_links.signed_in_at`` records that the link
did so (a compare-and-set, like ``used_at`` for deciding): each link signs
in once, so a forwarded mail cannot open more sessions later.
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("review_links") as batch:
        batch.add_column(sa.Column("signed_in_at", UTCDateTime))


def downgrade() -> None:
    with op.batch_alter_table("review_links") as batch:
        batch.drop_column("signed_in_at")
