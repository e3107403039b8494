"""Audit: a hash chain, so an edited, removed or inserted row shows.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

The audit log was append-only by trigger, which stops mistakes but not
someone with database access, and left nothing to hand an auditor. Each row
now carries ``prev_hash`` and ``hash`` (see :mod:`tapgate.store.audit_chain`),
computed by the database when the row is inserted:

- PostgreSQL: a ``BEFORE INSERT`` trigger takes a transaction advisory lock
  on the chain's tail (only audit appends wait for it, until their
  transaction commits), then gives the row the next id, reads the newest
  row's hash and hashes the row. Ids are handed out under the lock, so id
  order is commit order is chain order, across every replica.
- SQLite: writes are already serialised (``BEGIN IMMEDIATE``); an ``AFTER
  INSERT`` trigger fills in the two columns through ``tapgate_audit_link``,
  a function each tapgate connection registers (SQLite has no SHA-256), and
  the append-only trigger lets exactly that one update through.

The rows written before this revision are covered by a genesis row: its
``prev_hash`` is the chain computed over them, as they are now.
"""

import json
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from tapgate.store.audit_chain import GENESIS_EVENT, SCHEME, ZERO, canonical_time, link
from tapgate.store.schema import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

AUDIT_CHAIN_LOCK = 0x74676163  # "tgac": the advisory-lock key of the audit chain's tail

_audit = sa.table(
    "audit",
    sa.column("id", sa.Integer),
    sa.column("at", UTCDateTime()),
    sa.column("event", sa.String),
    sa.column("request_id", sa.String),
    sa.column("actor", sa.String),
    sa.column("detail", sa.Text),
    sa.column("prev_hash", sa.String),
    sa.column("hash", sa.String),
)

_SQLITE_APPEND_ONLY = (
    "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END"
)

# The one update the chain needs: the newest row's two chain columns, once.
_SQLITE_CHAIN_ONLY = """CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
WHEN NOT (OLD.hash IS NULL AND OLD.prev_hash IS NULL AND NEW.hash IS NOT NULL
    AND NEW.id = OLD.id AND NEW.at IS OLD.at AND NEW.event IS OLD.event
    AND NEW.request_id IS OLD.request_id AND NEW.actor IS OLD.actor
    AND NEW.detail IS OLD.detail AND OLD.id = (SELECT max(id) FROM audit))
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END"""

_SQLITE_CHAIN = """CREATE TRIGGER audit_chain AFTER INSERT ON audit
BEGIN
    UPDATE audit SET
        prev_hash = (SELECT hash FROM audit WHERE id < NEW.id ORDER BY id DESC LIMIT 1),
        hash = tapgate_audit_link(
            (SELECT hash FROM audit WHERE id < NEW.id ORDER BY id DESC LIMIT 1),
            NEW.id, NEW.at, NEW.event, NEW.request_id, NEW.actor, NEW.detail)
    WHERE id = NEW.id;
END"""

_PG_CHAIN_FUNCTION = """
CREATE FUNCTION tapgate_audit_chain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The tail, not the table: other writers and every reader go on; audit
    -- appends wait for each other from here until their transaction ends.
    PERFORM pg_advisory_xact_lock({lock});
    NEW.id := nextval({sequence});
    SELECT hash INTO NEW.prev_hash FROM audit ORDER BY id DESC LIMIT 1;
    NEW.hash := encode(sha256(convert_to(
        '[' || coalesce(to_json(NEW.prev_hash)::text, 'null')
        || ',' || NEW.id::text
        || ',' || to_json(to_char(NEW.at AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'))::text
        || ',' || to_json(NEW.event)::text
        || ',' || coalesce(to_json(NEW.request_id)::text, 'null')
        || ',' || to_json(NEW.actor)::text
        || ',' || to_json(NEW.detail)::text
        || ']', 'UTF8')), 'hex');
    RETURN NEW;
END $$
"""


def upgrade() -> None:
    op.add_column("audit", sa.Column("prev_hash", sa.String(64)))
    op.add_column("audit", sa.Column("hash", sa.String(64)))
    sqlite = op.get_context().dialect.name == "sqlite"
    _genesis(sqlite=sqlite)
    if sqlite:
        op.execute("DROP TRIGGER audit_no_update")
        op.execute(_SQLITE_CHAIN_ONLY)
        op.execute(_SQLITE_CHAIN)
        return
    sequence = op.get_bind().scalar(sa.text("SELECT pg_get_serial_sequence('audit', 'id')"))
    # The trigger hands out ids, after the lock: a default would do it before.
    op.execute("ALTER TABLE audit ALTER COLUMN id DROP DEFAULT")
    op.execute(_PG_CHAIN_FUNCTION.format(lock=AUDIT_CHAIN_LOCK, sequence=_literal(sequence)))
    op.execute(
        "CREATE TRIGGER audit_chain BEFORE INSERT ON audit "
        "FOR EACH ROW EXECUTE FUNCTION tapgate_audit_chain()"
    )


def _literal(name: object) -> str:
    """A sequence's name (from the catalog) as an SQL string literal."""
    return "'" + str(name).replace("'", "''") + "'::regclass"


def _genesis(*, sqlite: bool) -> None:
    """The chain's first row: it covers every row before it through its ``prev_hash``."""
    conn = op.get_bind()
    head, earlier = ZERO, 0
    for row in conn.execute(sa.select(_audit).order_by(_audit.c.id)).mappings():
        head = link(
            head,
            row["id"],
            canonical_time(row["at"]),
            row["event"],
            row["request_id"],
            row["actor"],
            row["detail"],
        )
        earlier += 1
    if sqlite:
        row_id = conn.scalar(sa.text("SELECT coalesce(max(id), 0) + 1 FROM audit"))
    else:
        row_id = conn.scalar(sa.text("SELECT nextval(pg_get_serial_sequence('audit', 'id'))"))
    at = datetime.now(UTC)
    detail = json.dumps({"earlier_rows": earlier, "scheme": SCHEME}, sort_keys=True)
    values = {
        "id": row_id,
        "at": at,
        "event": GENESIS_EVENT,
        "request_id": None,
        "actor": "tapgate",
        "detail": detail,
        "prev_hash": head,
    }
    values["hash"] = link(head, row_id, canonical_time(at), GENESIS_EVENT, None, "tapgate", detail)
    conn.execute(sa.insert(_audit).values(values))


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute("DROP TRIGGER audit_chain")
        op.execute("DROP TRIGGER audit_no_update")
        op.execute(_SQLITE_APPEND_ONLY)
        # Native DROP COLUMN (SQLite 3.35+): a batch copy would drop the triggers.
        op.execute("ALTER TABLE audit DROP COLUMN hash")
        op.execute("ALTER TABLE audit DROP COLUMN prev_hash")
        return
    op.execute("DROP TRIGGER audit_chain ON audit")
    op.execute("DROP FUNCTION tapgate_audit_chain()")
    sequence = op.get_bind().scalar(sa.text("SELECT pg_get_serial_sequence('audit', 'id')"))
    op.execute(f"ALTER TABLE audit ALTER COLUMN id SET DEFAULT nextval({_literal(sequence)})")
    op.drop_column("audit", "hash")
    op.drop_column("audit", "prev_hash")
