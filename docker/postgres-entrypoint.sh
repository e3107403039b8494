#!/bin/sh
# First start (empty $PGDATA): a cluster whose superuser is $POSTGRES_USER with
# $POSTGRES_PASSWORD, password logins from the network, and the database $POSTGRES_DB.
# Every start: run postgres in the foreground as PID 1.
set -eu
user=${POSTGRES_USER:-tapgate}
db=${POSTGRES_DB:-tapgate}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "postgres-entrypoint: set POSTGRES_PASSWORD for the first start" >&2
        exit 2
    fi
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --username="$user" --pwfile="$pwfile" --auth-local=trust \
        --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    if [ "$db" != postgres ]; then
        echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
fi
exec postgres -D "$PGDATA"
