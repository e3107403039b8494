# A PostgreSQL 15 server on the same local Debian base as tapgate's image, for the
# compose file's replica setup where no registry image may be pulled. Any PostgreSQL
# 12+ works instead (a managed one, or `image: postgres:16` where registries are allowed).
#
#   docker build -f docker/postgres.Dockerfile -t tapgate-postgres:15 docker
#
# POSTGRES_PASSWORD (required), POSTGRES_USER and POSTGRES_DB (default tapgate) are
# read on the first start, when the data volume is empty.
ARG BASE=tapgate-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends postgresql-15 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data \
 && install -d -o postgres -g postgres -m 2775 /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
HEALTHCHECK --interval=2s --timeout=3s --retries=30 CMD ["pg_isready", "-h", "127.0.0.1", "-q"]
# postgres's "fast" shutdown: SIGINT.
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
