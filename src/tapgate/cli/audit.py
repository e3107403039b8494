"""``tapgate audit``: print or export the audit log, and check its hash chain.

``tapgate audit`` prints the log; ``--format jsonl`` writes one row per line
with its ``prev_hash`` and ``hash``, ``detail`` as the JSON text that was
hashed, so the copy can be checked away from tapgate (the printed log masks
what looks like a credential in a typed reason; the export keeps the text as
hashed). ``tapgate audit
verify`` checks the database's chain from its genesis, or with ``--file``
an exported copy, and names the first broken link: exit status 0 when every
link holds, 1 when one is broken (2 stays "could not run", as for every
command). ``--anchor ID:HASH`` (a head printed by an earlier check, kept
somewhere else) also catches a log cut short or rewritten from some row on,
which a chain alone cannot show.

Like the other operator commands, these use the database as it is, never
creating or migrating it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import IO

from tapgate.cli.database import with_gate
from tapgate.cli.text import format_time
from tapgate.config import Config
from tapgate.errors import ConfigError
from tapgate.gate.gate import Gate
from tapgate.policy.masking import mask_text
from tapgate.store.audit_chain import ChainRow, ChainVerdict, Verifier

__all__ = ["EXIT_BROKEN", "audit", "verify"]

EXIT_BROKEN = 1
"""``tapgate audit verify`` found a broken link."""


def audit(args: argparse.Namespace, config: Config) -> int:
    """Print the audit log, oldest first (``--format jsonl``: the rows as hashed)."""
    since = _parse_since(args.since) if args.since else None
    if args.format == "jsonl":

        async def export(gate: Gate) -> None:
            async for row in gate.audit_chain(since=since, request_id=args.request):
                print(json.dumps(row.to_json(), ensure_ascii=False))

        with_gate(config, export)
        return 0
    entries = with_gate(config, lambda g: g.audit_log(since=since, request_id=args.request))
    for entry in entries:
        detail = dict(entry.detail)
        if isinstance(detail.get("reason"), str):  # an approver's typed words: hostile text
            detail["reason"] = mask_text(detail["reason"])
        print(
            f"{format_time(entry.at)}  {entry.event:<9} {entry.actor:<16} "
            f"{entry.request_id or '-'}  {json.dumps(detail, sort_keys=True)}"
        )
    return 0


def verify(args: argparse.Namespace, config: Config | None) -> int:
    """Check the chain of the database (or of ``--file``); print the first broken link.

    ``config`` is ``None`` with ``--file``: an auditor needs no config and no database.
    """
    anchors = _parse_anchors(args.anchor or [])
    if config is None:
        verdict = _verify_file(args.file, anchors)
    else:
        verdict = with_gate(config, lambda g: g.verify_audit(anchors=anchors))
    print(_describe(verdict))
    return 0 if verdict.ok else EXIT_BROKEN


def _verify_file(path: str, anchors: Mapping[int, str]) -> ChainVerdict:
    """An exported copy: every line a row, its links checked without the database."""
    verifier = Verifier(require_genesis=False, anchors=anchors)
    try:
        with _open(path) as lines:
            for row in _rows(lines):
                if not verifier.feed(row):
                    break
    except OSError as exc:
        raise ConfigError("--file", f"cannot read {path}: {exc.strerror or exc}") from None
    return verifier.verdict()


def _open(path: str) -> IO[str]:
    if path == "-":
        return open(sys.stdin.fileno(), encoding="utf-8", closefd=False)
    return open(path, encoding="utf-8")


def _rows(lines: IO[str]) -> Iterator[ChainRow]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield ChainRow.from_json(json.loads(line))
        except (ValueError, TypeError) as exc:
            raise ConfigError("--file", f"line {number} is not an audit row: {exc}") from None


def _describe(verdict: ChainVerdict) -> str:
    if not verdict.ok:
        return f"broken at row {verdict.broken_at}: {verdict.problem}"
    head = f"; head: row {verdict.head[0]} {verdict.head[1]}" if verdict.head else ""
    if verdict.from_genesis:
        origin = f"from the genesis, which covers {verdict.earlier} earlier rows"
    else:
        origin = "a partial copy: its first row's prev_hash is taken as given"
    rows = f"{verdict.rows} row" + ("" if verdict.rows == 1 else "s")
    return f"ok: {rows} ({origin}){head}"


def _parse_anchors(values: list[str]) -> dict[int, str]:
    anchors: dict[int, str] = {}
    for value in values:
        row_id, _, digest = value.partition(":")
        if not row_id.isdigit() or len(digest) != 64:
            raise ConfigError("--anchor", f"expected ROW_ID:SHA256_HEX, got {value!r}")
        anchors[int(row_id)] = digest.lower()
    return anchors


def _parse_since(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError("--since", f"expected an ISO 8601 time, got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
