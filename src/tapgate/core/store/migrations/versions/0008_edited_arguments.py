"""Edit, then approve: the arguments an approver approved instead of the agent's.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24

- ``requests.edited_arguments``: the edited call (canonical JSON), set by the
  compare-and-set that approves it; ``NULL`` for every other decision.
- ``requests.edited_digest``: its SHA-256, what an edited approval covers: a
  re-issue of the *edited* call consumes it, a re-issue of the original call
  never does (an approval never covers more than what the approver saw).
  Indexed like ``args_digest`` for that lookup.

Existing requests keep both ``NULL``: none of them was edited.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("edited_arguments", sa.Text))
        batch.add_column(sa.Column("edited_digest", sa.String(64)))
    op.create_index("ix_requests_edited_call", "requests", ["agent", "tool", "edited_digest"])


def downgrade() -> None:
    op.drop_index("ix_requests_edited_call", "requests")
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("edited_digest")
        batch.drop_column("edited_arguments")
