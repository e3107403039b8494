"""Path arguments, normalised before rules and grant fingerprints see them.

A glob such as ``/srv/data/*`` matched against the raw string also matches
``/srv/data/../../etc/passwd``, so the policy judges the path the tool will
open, not the text the model wrote. Normalising is lexical only: these are
pure functions that never touch a filesystem, because the gate may run on
another machine than the tool and a lookup would race the tool anyway
(symlinks and bind mounts are the OS sandbox's job; see THREAT_MODEL.md).

The rules, each chosen to fail towards asking a human:

- ``.`` segments and repeated separators go; ``..`` removes the segment
  before it. A relative path is resolved against the call's ``cwd``
  argument when that is a string; otherwise it stays relative.
- A ``..`` with nothing left to remove *climbs above the root* the path is
  resolved against (``/``, ``~``, ``cwd`` when it is relative, or the unknown
  working directory): it is dropped from the value, as the kernel does at
  ``/``, and recorded as a hazard, so the call is never auto-allowed.
- A leading ``~`` or ``~user`` segment is a root of its own: a tool may
  expand it to a home directory the gate does not know, so it is never joined
  to ``cwd``.
- Backslashes, percent-encoded dots, separators and escapes (``%2e``,
  ``%2f``, ``%5c``, ``%25``, overlong ``%c0``/``%c1``) and NUL bytes are
  read both ways, since the gate cannot know which the tool does: decoded
  (``\\`` as a separator, percent-decoding repeated, the string cut at NUL),
  which becomes the value, and literally (POSIX, where ``\\`` is an ordinary
  character), kept as :attr:`PathReading.literal` so that a deny rule
  matching it still denies. Either form is a hazard: such a path is never
  auto-allowed. Decoding alone would not do: on POSIX ``/etc/x\\..\\..\\srv/y``
  is a file under ``/etc``, yet decodes to ``/srv/y``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

__all__ = ["CWD_ARGUMENT", "DEFAULT_PATH_ARGUMENTS", "PathReading", "normalise", "read_paths"]

DEFAULT_PATH_ARGUMENTS: tuple[str, ...] = ("file_path", "notebook_path", "path")
"""The argument names normalised for a tool whose spec does not set ``paths``.

Claude Code's own: ``file_path`` (Read, Write, Edit, MultiEdit),
``notebook_path`` (NotebookEdit), ``path`` (Glob, Grep, LS); ``path`` is also
what most file tools of MCP servers and hand-written agents call it.
"""

CWD_ARGUMENT = "cwd"
"""The argument a relative path is resolved against, when the call has it."""

_ENCODED = re.compile(r"%(?:2e|2f|5c|25|00|c0|c1)", re.IGNORECASE)
_DECODE_ROUNDS = 4  # %252e2e… needs one round per layer; more layers are still a hazard
_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class PathReading:
    """One path argument as written and as the policy judges it.

    ``value`` is what rules and fingerprints see: for an ambiguous path, the
    decoded reading (the traversal it spells). ``hazards`` say why the call
    must never be allowed by a rule or a grant. ``literal`` is the POSIX
    reading of an ambiguous path (``\\`` an ordinary character, nothing
    decoded) when that differs, so a deny rule matching it still denies.
    """

    written: str
    value: str
    hazards: tuple[str, ...] = ()
    literal: str | None = None

    @property
    def unchanged(self) -> bool:
        """True when the policy may judge the value as written (the common, fast case)."""
        return not self.hazards and self.value == self.written


@dataclass(frozen=True, slots=True)
class _Resolved:
    value: str
    climbs: str | None  # the root that was climbed above, if any


def _split_root(path: str) -> tuple[str | None, str]:
    """The root ``path`` names (``/``, ``~``, ``~user``) and the rest; ``None`` if relative."""
    if path.startswith("/"):
        return "/", path
    if path.startswith("~"):
        head, _, rest = path.partition("/")
        return head, rest
    return None, path


def _resolve(path: str, cwd: str | None) -> _Resolved:
    """``path`` with ``.``, ``..`` and empty segments resolved, against ``cwd`` if relative."""
    root, rest = _split_root(path)
    segments: list[str] = []
    climbs: str | None = None
    if root is None and cwd:
        base = _resolve(cwd, None)
        climbs = base.climbs
        root, base_rest = _split_root(base.value)
        segments = [s for s in base_rest.split("/") if s and s != "."]
    for segment in rest.split("/"):
        if segment in ("", "."):
            continue
        if segment != "..":
            segments.append(segment)
        elif segments:
            segments.pop()
        else:
            climbs = climbs or _root_name(root)
    body = "/".join(segments)
    if root is None:
        return _Resolved(body or ".", climbs)
    if root == "/":
        return _Resolved("/" + body, climbs)
    return _Resolved(f"{root}/{body}" if body else root, climbs)


def _root_name(root: str | None) -> str:
    return "its working directory" if root is None else root


def _decode(text: str) -> str:
    """What a decoding tool would open: escapes undone, ``\\`` a separator, cut at NUL."""
    for _ in range(_DECODE_ROUNDS):
        if "%" not in text:
            break
        decoded = unquote(text, errors="surrogateescape")
        if decoded == text:
            break
        text = decoded
    return text.replace("\\", "/").split("\x00", 1)[0]


def _ambiguities(text: str) -> list[str]:
    found = []
    if "\\" in text:
        found.append("a backslash (a Windows separator)")
    if _ENCODED.search(text):
        found.append("a percent-encoded dot, separator or escape")
    if "\x00" in text:
        found.append("a NUL byte")
    return found


@lru_cache(maxsize=_CACHE_SIZE)
def normalise(path: str, cwd: str | None = None) -> PathReading:
    """Read ``path`` (resolved against ``cwd`` when relative) as the policy must judge it."""
    cwd = cwd if _split_root(path)[0] is None else None
    hazards = _ambiguities(path) + (_ambiguities(cwd) if cwd else [])
    literal = _resolve(path, cwd)
    if not hazards:
        climbs = [f"climbs above {literal.climbs}"] if literal.climbs else []
        return PathReading(written=path, value=literal.value, hazards=tuple(climbs))
    decoded = _resolve(_decode(path), _decode(cwd) if cwd else None)
    if decoded.climbs:
        hazards.insert(0, f"climbs above {decoded.climbs}")
    elif literal.climbs:
        hazards.insert(0, f"climbs above {literal.climbs} as written")
    other = literal.value if literal.value != decoded.value else None
    return PathReading(written=path, value=decoded.value, hazards=tuple(hazards), literal=other)


def read_paths(arguments: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, PathReading]:
    """The readings of the arguments ``names`` that ``arguments`` holds as non-empty strings.

    Cheap when none is present (the common case for most tools): one dict
    lookup per name and no allocation beyond the empty result.
    """
    found: dict[str, PathReading] = {}
    for name in names:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            cwd = arguments.get(CWD_ARGUMENT)
            found[name] = normalise(value, cwd if isinstance(cwd, str) and cwd else None)
    return found
