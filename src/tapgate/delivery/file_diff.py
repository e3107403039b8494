"""A file write's diff as an approval card shows it: fast on large files, numbered as the file.

Split from :mod:`tapgate.delivery.presentation` (what a card shows) because
how a diff stays cheap is a concern of its own.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["unified_diff"]

# difflib is quadratic on many scattered changes (5,000 lines took ~2 s, blocking the
# event loop for every approver's message); messages show ~50 lines of it anyway.
_DIFF_MAX_LINES = 400


def unified_diff(old: str, new: str, path: str) -> str:
    """A unified diff, line numbers of the whole file, of at most ``_DIFF_MAX_LINES`` a side.

    The common head and tail are skipped first (linear), so a change deep in a
    large file is what the diff shows, and difflib's quadratic part only ever
    sees the changed middle, capped.
    """
    old_lines, new_lines = old.split("\n"), new.split("\n")
    head = _common_run(old_lines, new_lines)
    tail = _common_run(old_lines[head:][::-1], new_lines[head:][::-1])
    start = max(head - _DIFF_CONTEXT, 0)
    old_mid = old_lines[start : len(old_lines) - max(tail - _DIFF_CONTEXT, 0)]
    new_mid = new_lines[start : len(new_lines) - max(tail - _DIFF_CONTEXT, 0)]
    note = ""
    if max(len(old_mid), len(new_mid)) > _DIFF_MAX_LINES:
        old_mid, new_mid = old_mid[:_DIFF_MAX_LINES], new_mid[:_DIFF_MAX_LINES]
        note = f"\n… diff covers {_DIFF_MAX_LINES} lines of each side from line {start + 1}"
    lines = difflib.unified_diff(
        old_mid, new_mid, fromfile=f"a/{path}", tofile=f"b/{path}", lineterm=""
    )
    text = "\n".join(_HUNK.sub(lambda m: _shifted(m, start), line) for line in lines)
    return (text or "(no visible change)") + note


_DIFF_CONTEXT = 3  # unified_diff's own default
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _common_run(a: list[str], b: list[str]) -> int:
    """How many leading lines ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _shifted(match: re.Match[str], offset: int) -> str:
    """A hunk header of a slice, renumbered as lines of the whole file."""
    old_at, old_len, new_at, new_len = match.groups()
    return f"@@ -{int(old_at) + offset}{old_len or ''} +{int(new_at) + offset}{new_len or ''} @@"
