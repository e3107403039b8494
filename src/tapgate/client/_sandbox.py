"""``tapgate run --sandbox``: the approved command runs under bubblewrap, confined by the server.

Approval says *whether* a command runs; the sandbox bounds *what it can do*
once it runs, so that a command that does more than the approver read (a
script that also deletes, a build step that phones home) is stopped by the
kernel. The bounds come from the tool's ``sandbox`` section in the server's
config (``GET /v1/tools/{tool}/sandbox``), never from the agent's side:

- the root filesystem is mounted read-only and stays readable, except the
  ``hidden`` paths (an empty read-only tmpfs over a directory, ``/dev/null``
  over a file);
- nothing is writable but a private, empty ``/tmp`` and the ``writable``
  paths (``"."`` is the directory ``tapgate run`` starts in);
- no network (a namespace with only its own loopback) unless ``network``;
- a minimal ``/dev``, a ``/proc`` of the sandbox's own processes, every
  capability dropped (as root, bwrap would otherwise keep them all), a new
  session (no ``TIOCSTI`` keystrokes pushed into the caller's terminal), and
  the sandbox dies with ``tapgate run``.

Where the sandbox cannot be applied, :class:`SandboxUnavailable` says why in
words an operator can act on; ``--sandbox=best-effort`` turns it into a
warning. Building the bwrap command line (:func:`bwrap_args`) is separate
from running it, so its every option can be read and tested.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from tapgate.client._errors import ClientError, SandboxUnavailable

__all__ = [
    "EXIT_NO_SANDBOX",
    "PROBE_TIMEOUT",
    "Sandbox",
    "SandboxMode",
    "SandboxSpec",
    "bwrap_args",
    "confine",
    "spec_from",
]

SandboxMode = Literal["strict", "best-effort"]
"""``strict``: no sandbox, no run. ``best-effort``: no sandbox, a warning, then the run."""

EXIT_NO_SANDBOX = 71
"""``EX_OSERR``: the operating system cannot confine the command, so it did not run."""

PROBE_TIMEOUT = 10.0
"""Seconds the trial run of the sandbox may take before it counts as not working."""

_INSTALL = (
    "install bubblewrap (Debian / Ubuntu: apt-get install bubblewrap; "
    "Fedora: dnf install bubblewrap)"
)
_TMP = "/tmp"  # noqa: S108 - inside the sandbox only, where it is a fresh private tmpfs
_USERNS = (
    "user namespaces look disabled for this user (sysctl kernel.unprivileged_userns_clone or "
    "user.max_user_namespaces, or an AppArmor restriction as on Ubuntu 24.04): allow them, "
    "or run tapgate run as root"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class SandboxSpec:
    """A tool's sandbox as the server states it; the defaults are the config's defaults.

    ``source`` is the YAML path it came from (``policy.tools.deploy.sandbox``),
    ``None`` when the tool's config has no ``sandbox`` section.
    """

    network: bool = False
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    source: str | None = None


def spec_from(body: dict[str, Any]) -> SandboxSpec:
    """The spec in ``GET /v1/tools/{tool}/sandbox``'s answer; anything else is ``bad_response``.

    Read strictly: a field of the wrong type must not quietly become a default
    that confines less (or more) than the operator wrote.
    """
    network, source = body.get("network"), body.get("source")
    if not isinstance(network, bool) or not (source is None or isinstance(source, str)):
        raise _bad()
    return SandboxSpec(
        network=network,
        writable=_strings(body.get("writable")),
        hidden=_strings(body.get("hidden")),
        source=source,
    )


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _bad()
    return tuple(value)


def _bad() -> ClientError:
    return ClientError("not a sandbox answer", status=None, code="bad_response")


def bwrap_args(spec: SandboxSpec, *, cwd: str) -> list[str]:
    """bwrap's options for ``spec`` with the command starting in ``cwd`` (an absolute path).

    Mount order is what makes the guarantees: the private ``/tmp`` first, so
    a writable path under ``/tmp`` is bound over it; ``hidden`` last, so a
    hidden path stays hidden even inside (or over) a writable one. Paths are
    resolved through symlinks on this host; a writable path that does not
    exist is skipped (there is nothing to bind, and creating it would be a
    write nobody allowed). Raises :class:`SandboxUnavailable` when ``"."``
    would make the whole filesystem writable.
    """
    here = os.path.realpath(cwd)
    args = ["--unshare-all"]  # user (where possible), ipc, pid, net, uts, cgroup
    if spec.network:
        args.append("--share-net")
    args += ["--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", _TMP]
    if _inside(here, _TMP):
        args += ["--ro-bind", here, here]  # the starting directory stays reachable, read-only
    for path in _writable(spec.writable, here):
        args += ["--bind", path, path]
    for path in spec.hidden:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            args += ["--tmpfs", real, "--remount-ro", real]
        elif os.path.lexists(real):
            args += ["--ro-bind", "/dev/null", real]
    return [*args, "--chdir", here]


def _writable(paths: Sequence[str], here: str) -> list[str]:
    out = []
    for path in paths:
        real = here if path == "." else os.path.realpath(path)
        if real == "/":
            named = f"the starting directory ({here})" if path == "." else path
            raise SandboxUnavailable(f"writable path {named} is the whole filesystem")
        if os.path.exists(real):
            out.append(real)
    return out


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


@dataclass(frozen=True, kw_only=True, slots=True)
class Sandbox:
    """A spec checked on this host: :meth:`command` wraps an argv in it."""

    bwrap: str
    spec: SandboxSpec
    cwd: str

    def command(self, argv: Sequence[str]) -> list[str]:
        """The bwrap command line that runs ``argv`` confined.

        The program is looked up here, as it would be without the sandbox, so
        "not found" and "not executable" keep their own exit statuses (127,
        126) rather than becoming bwrap's catch-all 1.
        """
        _check_program(argv[0], self.cwd)
        return [self.bwrap, *bwrap_args(self.spec, cwd=self.cwd), "--", *argv]


def _check_program(program: str, cwd: str) -> None:
    if "/" not in program:
        if shutil.which(program) is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        return
    path = os.path.join(cwd, program)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


def confine(
    mode: SandboxMode,
    fetch: Callable[[], SandboxSpec],
    *,
    bwrap: str = "bwrap",
    err: TextIO | None = None,
) -> Sandbox | None:
    """The sandbox to run the command in, checked by a trial run; ``None`` to run unconfined.

    Checked *before* approval is asked, so that a command that could not run
    anyway never reaches the approvers' phones. bwrap is looked for first (no
    server needed to say it is missing), then the server's spec is fetched
    with ``fetch`` (its errors propagate: unreachable, 401), then the spec is
    tried with a harmless command. In ``strict`` mode a failure raises
    :class:`SandboxUnavailable`; in ``best-effort`` it is written to ``err``
    as a warning and ``None`` comes back.
    """
    try:
        return _checked(fetch, bwrap)
    except SandboxUnavailable as exc:
        if mode == "strict":
            raise
        out = err if err is not None else sys.stderr
        out.write(f"tapgate: warning: {exc.reason}; running unsandboxed (--sandbox=best-effort)\n")
        out.flush()
        return None


def _checked(fetch: Callable[[], SandboxSpec], bwrap: str) -> Sandbox:
    found = shutil.which(bwrap)
    if found is None:
        raise SandboxUnavailable(f"bwrap not found ({bwrap!r} on PATH): {_INSTALL}")
    try:
        spec = fetch()
    except ClientError as exc:
        if exc.status != 404:
            raise
        raise SandboxUnavailable(
            "the server has no sandbox configs (GET /v1/tools/{tool}/sandbox is a 404): "
            "upgrade the tapgate server"
        ) from exc
    sandbox = Sandbox(bwrap=found, spec=spec, cwd=os.getcwd())
    _probe(sandbox)
    return sandbox


def _probe(sandbox: Sandbox) -> None:
    """Run a no-op in ``sandbox``: bwrap's own words when it cannot build it here."""
    noop = shutil.which("true") or sys.executable
    argv = [noop] if noop != sys.executable else [noop, "-c", ""]
    try:
        done = subprocess.run(  # noqa: S603 - our own bwrap command line, no shell
            sandbox.command(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SandboxUnavailable(
            f"bwrap did not finish a trial run within {PROBE_TIMEOUT:g}s"
        ) from None
    except OSError as exc:
        raise SandboxUnavailable(f"cannot run {sandbox.bwrap}: {exc.strerror or exc}") from None
    if done.returncode == 0:
        return
    said = done.stderr.decode(errors="replace").strip().splitlines()
    detail = said[-1] if said else f"exit status {done.returncode}"
    hint = ""
    if any(word in detail.lower() for word in ("namespace", "uid map", "operation not permitted")):
        hint = f"; {_USERNS}"
    raise SandboxUnavailable(f"bwrap cannot build the sandbox here ({detail}){hint}")
