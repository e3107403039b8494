"""Alembic environment: tapgate always hands Alembic an open connection.

Migrations run through :func:`tapgate.store.engine.upgrade` (at start-up
and by ``tapgate db upgrade``), which passes the connection in
``config.attributes`` so SQLite pragmas and async drivers apply as usual.
"""

from alembic import context

from tapgate.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `tapgate db upgrade`, not the alembic CLI")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
