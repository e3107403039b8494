"""The audit log's hash chain: what one link is, and checking a chain of them.

Every audit row carries ``prev_hash`` (the ``hash`` of the row before it) and
``hash``, the SHA-256 (hex) of the row's *canonical line*: the compact JSON
array ``[prev_hash, id, at, event, request_id, actor, detail]`` (UTF-8, no
spaces, non-ASCII as is), where ``at`` is the UTC time as
``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` and ``detail`` the JSON text exactly as
stored. The database computes it when the row is inserted (a trigger, see
migration 0003), so no writer can leave a row out; :func:`link` is the same
definition in Python, for checking.

A chain starts at its *genesis* row (written by the migration): its
``prev_hash`` is the head of the same chain computed over the rows written
before the migration (from :data:`ZERO`), so those rows are covered too, as
they were when the chain began.

Stdlib only and free of the store, so an exported copy is checked with
exactly this code, or with the few lines of stdlib Python in
``docs/architecture.md`` that an auditor can read instead of trusting ours.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "GENESIS_EVENT",
    "SCHEME",
    "ZERO",
    "ChainRow",
    "ChainVerdict",
    "Verifier",
    "canonical_time",
    "link",
    "verify",
]

ZERO = "0" * 64
"""The ``prev_hash`` the chain over the rows before the genesis starts from."""

GENESIS_EVENT = "chain_genesis"
"""The audit event of the row a chain starts at."""

SCHEME = "sha256-v1"
"""The link format above; a new format would be a new name, never a change to this one."""


def canonical_time(at: datetime) -> str:
    """``at`` in UTC with microseconds always shown: the form the database hashes."""
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def link(  # noqa: PLR0917 - the seven fields of a canonical line, in its order
    prev_hash: str | None,
    id: int,
    at: str,
    event: str,
    request_id: str | None,
    actor: str,
    detail: str,
) -> str:
    """The hash of one row given the hash before it (``at`` as :func:`canonical_time`)."""
    line = json.dumps(
        [prev_hash, id, at, event, request_id, actor, detail],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class ChainRow:
    """One audit row as hashed: what ``tapgate audit --format jsonl`` writes per line."""

    id: int
    at: str
    event: str
    request_id: str | None
    actor: str
    detail: str
    prev_hash: str | None
    hash: str | None

    def computed(self) -> str:
        """The hash this row's contents give after its own ``prev_hash``."""
        return link(
            self.prev_hash, self.id, self.at, self.event, self.request_id, self.actor, self.detail
        )

    def to_json(self) -> dict[str, Any]:
        """The export's JSON object (``detail`` stays the stored text: that is what is hashed)."""
        return {
            "id": self.id,
            "at": self.at,
            "event": self.event,
            "request_id": self.request_id,
            "actor": self.actor,
            "detail": self.detail,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ChainRow:
        """A row from an export's line; ``ValueError`` / ``TypeError`` when it is not one."""
        if not isinstance(obj, dict):
            raise TypeError("not a JSON object")
        try:
            row = cls(**{name: obj[name] for name in cls.__slots__})
        except KeyError as exc:
            raise ValueError(f"no {exc.args[0]!r}") from None
        if not isinstance(row.id, int) or isinstance(row.id, bool):
            raise TypeError("'id' is not an integer")
        texts = (row.at, row.event, row.actor, row.detail)
        optional = (row.request_id, row.prev_hash, row.hash)
        if not all(isinstance(v, str) for v in texts) or not all(
            v is None or isinstance(v, str) for v in optional
        ):
            raise TypeError("a field has the wrong type")
        return row


@dataclass(frozen=True, kw_only=True, slots=True)
class ChainVerdict:
    """What checking a chain found: the first broken link, or how much holds."""

    rows: int
    earlier: int = 0
    """Rows before the genesis, covered through the genesis' ``prev_hash``."""
    from_genesis: bool = False
    head: tuple[int, str] | None = None
    """The last row checked and its hash: record it elsewhere to anchor a later check."""
    broken_at: int | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """True when every link held."""
        return self.problem is None


@dataclass(slots=True)
class Verifier:
    """Checks rows fed in id order, one at a time, so a long log never sits in memory.

    ``require_genesis`` (a whole database) makes a chain that does not begin
    at its genesis row a break; a partial export (``--since``) starts from
    its first row's ``prev_hash`` instead. ``anchors`` (row id → hash, noted
    down earlier) must still hold: without them, removing rows from the end
    of the log, or rewriting the whole chain from some row on, leaves a
    chain that verifies.
    """

    require_genesis: bool = True
    anchors: Mapping[int, str] = field(default_factory=dict)
    _rows: int = 0
    _earlier: int = 0
    _virtual: str = ZERO
    _started: bool = False
    _from_genesis: bool = False
    _last: ChainRow | None = None
    _broken: tuple[int, str] | None = None

    def feed(self, row: ChainRow) -> bool:
        """Check the next row; ``False`` once the chain is broken (stop feeding)."""
        if self._broken is None:
            problem = self._check(row)
            if problem is not None:
                self._broken = (row.id, problem)
            else:
                self._rows += 1
                self._last = row
        return self._broken is None

    def verdict(self) -> ChainVerdict:
        """The result over every row fed so far."""
        broken = self._broken or self._missing_anchor()
        last = self._last
        return ChainVerdict(
            rows=self._rows,
            earlier=self._earlier,
            from_genesis=self._from_genesis,
            head=(last.id, last.hash) if last is not None and last.hash is not None else None,
            broken_at=broken[0] if broken else None,
            problem=broken[1] if broken else None,
        )

    def _check(self, row: ChainRow) -> str | None:
        problem = self._order(row)
        if problem is not None or row.hash is None:
            return problem
        if not self._started:
            problem = self._start(row)
        elif self._last is not None and row.prev_hash != self._last.hash:
            problem = (
                f"prev_hash is not the hash of row {self._last.id}: a row was removed, "
                "inserted or reordered before it"
            )
        if problem is None and row.computed() != row.hash:
            problem = "the hash does not match the row's contents: the row was changed"
        expected = self.anchors.get(row.id)
        if problem is None and expected is not None and expected != row.hash:
            problem = "the hash is not the anchored one: the chain was rewritten up to here"
        return problem

    def _order(self, row: ChainRow) -> str | None:
        """Ids rise, no anchored row is skipped, and rows before the genesis are summed up."""
        last_id = self._last.id if self._last is not None else 0
        if self._last is not None and row.id <= last_id:
            return f"comes after row {last_id}: the rows are out of order"
        skipped = [a for a in self.anchors if last_id < a < row.id]
        if skipped:
            return f"the anchored row {min(skipped)} before it is missing"
        if row.hash is None:
            if self._started:
                return "has no hash, after the chain began: it was written around the chain"
            self._earlier += 1
            self._virtual = link(
                self._virtual, row.id, row.at, row.event, row.request_id, row.actor, row.detail
            )
        return None

    def _start(self, row: ChainRow) -> str | None:
        self._started = True
        if row.event == GENESIS_EVENT:
            self._from_genesis = True
            if row.prev_hash != self._virtual:
                return (
                    f"the {self._earlier} rows before the chain's genesis do not hash to its "
                    "prev_hash: one of them was changed or removed"
                )
            return None
        if self.require_genesis or self._earlier:
            return "the chain does not begin at its genesis row: rows before it were removed"
        return None

    def _missing_anchor(self) -> tuple[int, str] | None:
        last_id = self._last.id if self._last is not None else 0
        for anchor in sorted(self.anchors):
            if anchor > last_id:
                return (anchor, "the anchored row is missing: the log was cut short")
        if self.require_genesis and not self._started:
            return (last_id, "no genesis row: the chain is missing")
        return None


def verify(
    rows: Iterable[ChainRow],
    *,
    require_genesis: bool = True,
    anchors: Mapping[int, str] | None = None,
) -> ChainVerdict:
    """Check ``rows`` (in id order) and report the first broken link."""
    verifier = Verifier(require_genesis=require_genesis, anchors=anchors or {})
    for row in rows:
        if not verifier.feed(row):
            break
    return verifier.verdict()
