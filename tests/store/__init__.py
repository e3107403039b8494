"""Tests of the store on SQLite and PostgreSQL: lifecycle, outbox, prepared statements, replicas."""
