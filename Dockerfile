# tapgate's container image: `tapgate serve` as a non-root user, the config at
# /etc/tapgate/tapgate.yaml, SQLite (when used) under the /var/lib/tapgate volume.
#
# The base is a plain Debian bookworm with python3 and python3-venv, made locally
# (docker/build-base: debootstrap, then `docker import`), so nothing is pulled from a
# registry. Any Debian bookworm image with those two packages works as BASE.
#
#   docker/build-base                                   # once per machine: tapgate-base:bookworm
#   docker build -t tapgate .                           # installs from PyPI
#   pip wheel -w wheelhouse . && docker build -t tapgate .   # offline, from ./wheelhouse
#
# With a wheelhouse/ folder (tapgate's wheel and its dependencies') in the build
# context, the build reads only that folder: air-gapped sites copy it in.
ARG BASE=tapgate-base:bookworm

FROM ${BASE} AS build
COPY . /src
# pip compiles the bytecode (the runtime user cannot write /opt); pip and setuptools serve
# only the install, so the final stage gets the venv without them.
RUN python3 -m venv /opt/tapgate \
 && if ls /src/wheelhouse/tapgate-*.whl >/dev/null 2>&1; then \
        /opt/tapgate/bin/pip install --no-cache-dir --no-index --find-links /src/wheelhouse tapgate; \
    else \
        /opt/tapgate/bin/pip install --no-cache-dir /src; \
    fi \
 && /opt/tapgate/bin/pip uninstall --yes --quiet pip setuptools

FROM ${BASE}
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/tapgate \
        --shell /usr/sbin/nologin tapgate \
 && install -d -o tapgate -g tapgate -m 0750 /var/lib/tapgate \
 && install -d -m 0755 /etc/tapgate
COPY --from=build /opt/tapgate /opt/tapgate
COPY docker/healthcheck.py /opt/tapgate/healthcheck.py
ENV PATH=/opt/tapgate/bin:$PATH \
    TAPGATE_CONFIG=/etc/tapgate/tapgate.yaml \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER tapgate
WORKDIR /var/lib/tapgate
VOLUME ["/var/lib/tapgate"]
EXPOSE 8080
# /readyz: the database answers and is migrated. Python, since the image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python3", "/opt/tapgate/healthcheck.py"]
# serve drains on SIGTERM for up to 15 s: `docker stop -t 20` (compose: stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["tapgate"]
CMD ["serve", "--host", "0.0.0.0"]
