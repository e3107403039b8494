"""Single-use "Always" grants: ``grants.uses_left``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24

``uses_left`` is how many more calls a grant made under ``always_uses`` may
allow; each allowed call takes one by a compare-and-set in the transaction
that would otherwise ask (``core/store/grants.py``), so two replicas cannot
both spend the last use. ``NULL`` (every existing grant) means no limit but
the expiry.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.add_column(sa.Column("uses_left", sa.Integer))


def downgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.drop_column("uses_left")
