"""The web inbox's sign-in links and sessions.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24

``web_sign_ins`` holds the single-use links an approver asks for in the chat
(only the token's SHA-256, its approver, its end, when it was used);
``web_sessions`` the cookies they were exchanged for (again only a hash), each
with its CSRF token and an end, revocable by the approver (decision
0016-web-identity-from-the-chat).
"""

import sqlalchemy as sa
from alembic import op

from tapgate.store.schema import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sign_ins",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("approver", sa.String(200), nullable=False),
        sa.Column("via", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
        sa.Column("used_at", UTCDateTime),
    )
    op.create_index("ix_web_sign_ins_expires_at", "web_sign_ins", ["expires_at"])
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("approver", sa.String(200), nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("via", sa.String(16), nullable=False),
        sa.Column("user_agent", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
        sa.Column("revoked_at", UTCDateTime),
    )
    op.create_index("ix_web_sessions_approver", "web_sessions", ["approver"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_approver", "web_sessions")
    op.drop_table("web_sessions")
    op.drop_index("ix_web_sign_ins_expires_at", "web_sign_ins")
    op.drop_table("web_sign_ins")
