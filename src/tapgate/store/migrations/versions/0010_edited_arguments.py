"""Edit, then approve: the arguments an approver approved instead of the agent's.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24

``requests.edited_arguments``: the edited call (canonical JSON), set by the
compare-and-set that approves it; ``NULL`` for every other decision. The
same compare-and-set sets the request's ``args_digest`` to the edited call's
digest, so the approval covers exactly what the approver saw: a re-issue of
the *edited* call uses it up (the existing ``ix_requests_call`` lookup), a
re-issue of the original call asks again. ``arguments`` keep the proposal;
the decision's audit line holds both digests.

Existing requests keep ``NULL``: none of them was edited.
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("edited_arguments", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("edited_arguments")
