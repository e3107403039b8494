"""``tapgate audit verify`` and the JSONL export, through the real command line.

The export is checked offline three ways: by ``tapgate audit verify --file``,
and by the stdlib snippet of docs/architecture.md (copied from the doc and
run as its own process, so the doc cannot drift from what tapgate writes).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli_ops import cli, submit, write_config

DOC = Path(__file__).parents[2] / "docs" / "architecture.md"


async def exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    config = write_config(tmp_path)
    rid = await submit(config, arguments={"env": "prod"})
    code, _, _ = await cli(
        capsys, "resolve", rid, "approve", "--config", str(config), "--as", "bob"
    )
    assert code == 0
    code, out, _ = await cli(capsys, "audit", "--config", str(config), "--format", "jsonl")
    assert code == 0
    export = tmp_path / "audit.jsonl"
    export.write_text(out, encoding="utf-8")
    return config, export


async def test_verify_a_clean_log_and_its_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, export = await exported(tmp_path, capsys)
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert [r["event"] for r in rows] == ["chain_genesis", "requested", "approved"]
    assert json.loads(rows[2]["detail"])["break_glass"] is True  # the stored text, as hashed
    assert all(len(r["hash"]) == 64 for r in rows)
    code, out, _ = await cli(capsys, "audit", "verify", "--config", str(config))
    assert code == 0
    assert out.startswith("ok: 3 rows (from the genesis") and rows[-1]["hash"] in out
    code, out, _ = await cli(capsys, "audit", "verify", "--file", str(export))
    assert code == 0
    assert out.split(";")[0] == "ok: 3 rows (from the genesis, which covers 0 earlier rows)"
    code, _, _ = await cli(capsys, "audit", "--config", str(config), "verify")  # either place
    assert code == 0
    anchor = f"{rows[-1]['id']}:{rows[-1]['hash']}"
    code, _, _ = await cli(capsys, "audit", "verify", "--config", str(config), "--anchor", anchor)
    assert code == 0


async def test_verify_names_an_edited_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = await exported(tmp_path, capsys)
    with sqlite3.connect(tmp_path / "ops.db") as db:  # the sqlite3 shell, as an attacker
        db.execute("DROP TRIGGER audit_no_update")
        db.execute("UPDATE audit SET actor = 'alice' WHERE event = 'approved'")
        [row_id] = db.execute("SELECT id FROM audit WHERE event = 'approved'").fetchone()
    code, out, _ = await cli(capsys, "audit", "verify", "--config", str(config))
    assert code == 1
    assert out.startswith(f"broken at row {row_id}: the hash does not match")


async def test_an_edited_or_reordered_export_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, export = await exported(tmp_path, capsys)
    lines = export.read_text().splitlines()
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join([*lines[:2], lines[2].replace('"bob"', '"alice"')]) + "\n")
    code, out, _ = await cli(capsys, "audit", "verify", "--file", str(edited))
    assert (code, out.startswith("broken at row 3: the hash does not match")) == (1, True)
    dropped = tmp_path / "dropped.jsonl"
    dropped.write_text("\n".join([lines[0], lines[2]]) + "\n")
    code, out, _ = await cli(capsys, "audit", "verify", "--file", str(dropped))
    assert (code, out.startswith("broken at row 3: prev_hash")) == (1, True)
    reordered = tmp_path / "reordered.jsonl"
    reordered.write_text("\n".join([lines[0], lines[2], lines[1]]) + "\n")
    code, _, _ = await cli(capsys, "audit", "verify", "--file", str(reordered))
    assert code == 1
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text(lines[0] + "\n{not json\n")
    code, _, err = await cli(capsys, "audit", "verify", "--file", str(garbage))
    assert code == 2 and "line 2 is not an audit row" in err


def doc_snippet() -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"```python\n(# verify_audit\.py.*?)```", text, re.DOTALL)
    assert match, "docs/architecture.md lost its offline verification snippet"
    return match.group(1)


async def test_the_documented_stdlib_snippet_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, export = await exported(tmp_path, capsys)
    script = tmp_path / "verify_audit.py"
    script.write_text(doc_snippet())

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-I", str(script), str(path)],
            check=False,
            capture_output=True,
            text=True,
        )

    good = run(export)
    assert (good.returncode, good.stdout.strip()) == (0, "ok: 3 rows")
    edited = tmp_path / "edited.jsonl"
    edited.write_text(export.read_text().replace('"bob"', '"alice"'))
    bad = run(edited)
    assert bad.returncode == 1 and "row 3" in bad.stdout


async def test_the_printed_log_masks_a_typed_reason_and_the_export_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    rid = await submit(config, arguments={"env": "prod"})
    token = "ghp" + "_" + "R2l0SHViVG9rZW5Gb3JUZXN0czAxMjM0NTY3"  # assembled: not a real one
    reason = f"leaked {token}\n<b>x</b>"
    code, _, _ = await cli(
        capsys, "resolve", rid, "deny", "--config", str(config), "--as", "bob", "--reason", reason
    )
    assert code == 0
    code, out, _ = await cli(capsys, "audit", "--config", str(config))
    [denied] = [line for line in out.splitlines() if " denied " in line]
    assert token not in denied and "leaked" in denied and "<b>x</b>" in denied
    code, out, _ = await cli(capsys, "audit", "--config", str(config), "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert json.loads(rows[-1]["detail"])["reason"] == reason  # as hashed, so it verifies
