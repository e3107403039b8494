"""Path arguments are normalised before rules and grants see them.

Each finding is reproduced first: on the code before normalisation, every test
marked "finding" allowed (or granted) what it must not.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapgate.cli import main
from tapgate.config import parse_config
from tapgate.errors import ConfigError
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.gate.models import Action, ToolCall
from tapgate.policy.engine import PATH_HAZARD_RULE, Policy
from tapgate.policy.paths import DEFAULT_PATH_ARGUMENTS, normalise
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec
from tapgate.store import Store


def rule(i: int, tool: str, action: Action, **args: str) -> Rule:
    return Rule(tool=tool, action=action, args=args, source=f"policy.rules[{i}]")


# The finding's rule, a deny beside it, and a protected sub-directory.
FINDING = Policy(
    PolicySpec(
        rules=(
            rule(0, "write_file", "allow", path="/srv/data/*"),
            rule(1, "write_file", "deny", path="/etc/*"),
            rule(2, "write_file", "deny", path="/srv/data/secret/*"),
            rule(3, "read_file", "allow", path="*"),
            rule(4, "Read", "deny", file_path="secrets/*"),
        )
    )
)


def verdict(tool: str, policy: Policy = FINDING, /, **args: Any) -> tuple[str, str]:
    v = policy.evaluate(ToolCall(tool=tool, arguments=args))
    return v.action, v.rule


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # finding: the `..` escape and its encoded and Windows-separator forms
        ("/srv/data/../../etc/passwd", ("deny", "policy.rules[1]")),
        ("/srv/data/%2e%2e/%2e%2e/etc/passwd", ("deny", "policy.rules[1]")),
        ("/srv/data/..%2f..%2fetc%2fpasswd", ("deny", "policy.rules[1]")),
        ("/srv/data/%252e%252e/%252e%252e/etc/passwd", ("deny", "policy.rules[1]")),
        ("/srv/data/..\\..\\etc\\passwd", ("deny", "policy.rules[1]")),
        ("/srv/data/../../home/x", ("ask", "policy.risk_defaults.write")),
        ("/srv/data/..\\..\\home\\x", ("ask", "policy.risk_defaults.write")),
        ("/srv/data/%2e%2e/%2e%2e/home/x", ("ask", "policy.risk_defaults.write")),
        ("/srv/data/sub\\..\\b.txt", ("ask", PATH_HAZARD_RULE)),  # inside, still ambiguous
        # finding: repeated separators and `.` dodged a deny on a sub-directory
        ("/srv/data//secret/key", ("deny", "policy.rules[2]")),
        ("/srv/data/./secret/key", ("deny", "policy.rules[2]")),
        # finding: the C-string reading (cut at NUL) is judged too
        ("/etc/passwd\x00/../../srv/data/x", ("deny", "policy.rules[1]")),
        # read literally on POSIX this is a file under /etc, decoded it is under /srv/data
        ("/etc/x\\..\\..\\srv/data/y", ("deny", "policy.rules[1]")),
        # what stays inside is still allowed
        ("/srv/data/a/../b.txt", ("allow", "policy.rules[0]")),
        ("/srv/data/b.txt", ("allow", "policy.rules[0]")),
    ],
)
def test_paths_are_judged_normalised(path: str, expected: tuple[str, str]) -> None:
    assert verdict("write_file", path=path) == expected


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("b.txt", "/srv/data", ("allow", "policy.rules[0]")),
        ("./sub//b.txt", "/srv/data/", ("allow", "policy.rules[0]")),
        ("../../etc/passwd", "/srv/data", ("deny", "policy.rules[1]")),  # finding
        ("secret/key", "/srv/data", ("deny", "policy.rules[2]")),
        ("../data/b.txt", "/srv/data", ("allow", "policy.rules[0]")),
        ("b.txt", None, ("ask", "policy.risk_defaults.write")),
        ("../../../../etc/passwd", "/srv/data", ("deny", "policy.rules[1]")),  # climbs above /
        ("../srv/data/b.txt", None, ("ask", "policy.risk_defaults.write")),  # not /srv/data
        ("b.txt", "../srv/data", ("ask", "policy.risk_defaults.write")),  # a relative cwd
        ("~/.ssh/id_rsa", "/srv/data", ("ask", "policy.risk_defaults.write")),  # ~ is a root
        ("%2e%2e%2f%2e%2e%2fetc/passwd", "/srv/data", ("deny", "policy.rules[1]")),
    ],
)
def test_relative_paths_resolve_against_cwd(
    path: str, cwd: str | None, expected: tuple[str, str]
) -> None:
    args = {"path": path} if cwd is None else {"path": path, "cwd": cwd}
    assert verdict("write_file", **args) == expected


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd",  # no cwd: above the unknown working directory
        "/../../etc/passwd",  # more `..` than segments
        "/srv/data/../../../etc/passwd",
        "..%2f..%2fetc",
        "a/../../b",
    ],
)
def test_a_path_climbing_above_its_root_is_never_auto_allowed(path: str) -> None:
    v = FINDING.evaluate(ToolCall(tool="read_file", arguments={"path": path}))
    assert (v.action, v.rule, v.grantable) == ("ask", PATH_HAZARD_RULE, False)  # finding
    assert "climbs above" in v.reason


def test_a_deny_rule_on_the_path_as_written_still_denies() -> None:
    """Resolving against ``cwd`` must not weaken a relative deny glob the operator wrote."""
    args = {"file_path": "secrets/key", "cwd": "/proj"}
    assert verdict("Read", **args) == ("deny", "policy.rules[4]")


def test_declared_paths_replace_the_default() -> None:
    policy = Policy(
        PolicySpec(
            tools=(
                ToolSpec(name="copy", paths=("src", "dst")),
                ToolSpec(name="http_get", paths=()),
            ),
            rules=(
                rule(0, "copy", "allow", src="/in/*", dst="/out/*"),
                rule(1, "http_get", "allow", path="/api/*"),
            ),
        )
    )
    assert verdict("copy", policy, src="/in/a", dst="/out/b") == ("allow", "policy.rules[0]")
    assert verdict("copy", policy, src="/in/a", dst="/out/../etc/b")[0] == "ask"
    # `path` is not a path argument of a tool that declares `paths: []`
    assert verdict("http_get", policy, path="/api/../x") == ("allow", "policy.rules[1]")
    assert DEFAULT_PATH_ARGUMENTS == ("file_path", "notebook_path", "path")


def test_fingerprints_are_of_normalised_paths() -> None:
    policy = Policy(PolicySpec(tools=(ToolSpec(name="write_file", fingerprint=("path",)),)))

    def fp(**args: str) -> str:
        return policy.fingerprint(ToolCall(tool="write_file", arguments=args))

    assert fp(path="/srv/data/./a") == fp(path="/srv/data//a") == fp(path="/srv/data/a")
    assert fp(path="a", cwd="/srv/data") == fp(path="/srv/data/a")
    assert fp(path="/srv/data/../etc/x") != fp(path="/srv/data/a")
    assert fp(path="notes.txt", cwd="/proj") != fp(path="notes.txt", cwd="/etc")


GRANT_SPEC = PolicySpec(tools=(ToolSpec(name="write_file", fingerprint=("path",)),))
DIRECTORY = Directory([Approver(name="alice", addresses=(("slack", "UA"),))], channels=("slack",))


def write(path: str, **more: str) -> ToolCall:
    return ToolCall(tool="write_file", arguments={"path": path, **more}, agent="ci", session="s1")


async def approve_always(gate: Gate, call: ToolCall) -> None:
    ticket = await gate.submit(call)
    assert ticket.request_id is not None
    await gate.resolve(ticket.request_id, "approve", by="alice", scope="always")


async def test_grants_cover_the_normalised_path_only(store: Store, clock: ManualClock) -> None:
    policy = Policy(GRANT_SPEC)
    async with Gate(store=store, policy=policy, directory=DIRECTORY, clock=clock) as gate:
        await approve_always(gate, write("notes.txt", cwd="/proj"))
        assert (await gate.submit(write("/proj/./notes.txt"))).decision is not None
        assert (await gate.submit(write("notes.txt", cwd="/etc"))).decision is None  # finding
        await approve_always(gate, write("/srv/data/a"))
        assert (await gate.submit(write("/srv/data/../etc/x"))).decision is None
        assert (await gate.submit(write("/srv/data//a"))).decision is not None


async def test_a_climbing_path_is_never_granted(store: Store, clock: ManualClock) -> None:
    policy = Policy(GRANT_SPEC)
    async with Gate(store=store, policy=policy, directory=DIRECTORY, clock=clock) as gate:
        for call in (write("../x"), write("/srv/..\\..\\x")):
            ticket = await gate.submit(call)
            assert ticket.request is not None and not ticket.request.grantable
            await gate.resolve(ticket.request.id, "approve", by="alice", scope="always")
            assert (await gate.submit(call)).decision is None  # finding
        assert await gate.grants() == []


EXPLAIN_YAML = """
approvers: [{name: me}]
policy:
  default_approvers: [me]
  tools:
    Write: {risk: write, fingerprint: [file_path]}
  rules:
    - {tool: Write, args: {file_path: "/srv/data/*"}, action: allow}
"""


def test_explain_shows_the_normalised_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tapgate.yaml"
    config.write_text(EXPLAIN_YAML, encoding="utf-8")
    args = json.dumps({"file_path": "/srv/data/../../etc/passwd"})
    base = ["explain", "--config", str(config), "--tool", "Write", "--args", args]
    assert main([*base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "ask"  # finding: was "allow"
    assert out["paths"] == {"file_path": "/etc/passwd"}
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "file_path: /etc/passwd  (written '/srv/data/../../etc/passwd')" in text
    climbing = json.dumps({"file_path": "/srv/data/../../../x"})
    assert main([*base[:-1], climbing, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["decision"], out["grantable"], out["paths"]) == ("ask", False, {"file_path": "/x"})
    assert "file_path climbs above /" in out["reason"]


@pytest.mark.parametrize(
    ("paths", "path", "message"),
    [
        ("file_path", "policy.tools.W.paths", "expected a list"),
        ({"a": "b"}, "policy.tools.W.paths", "expected a list"),
        ([1], "policy.tools.W.paths[0]", "expected a string"),
        ([""], "policy.tools.W.paths[0]", "must not be empty"),
    ],
)
def test_bad_paths_config_names_the_yaml_path(paths: object, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"policy": {"tools": {"W": {"paths": paths}}}}, env={})
    assert info.value.path == path
    assert message in info.value.message


@pytest.mark.parametrize(
    ("paths", "expected"), [([], ()), (["src", "dst"], ("src", "dst")), (None, None)]
)
def test_paths_config_reaches_the_tool_spec(
    paths: list[str] | None, expected: tuple[str, ...] | None
) -> None:
    config = parse_config({"policy": {"tools": {"W": {"paths": paths}}}}, env={})
    [tool] = config.policy_spec().tools
    assert tool.paths == expected


# Properties: whatever the model writes, the value has no `..` and an allow on a
# directory never lets a path out of it, read either way a tool might read it.

_SEGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "",
        "data",
        "srv",
        "etc",
        "x",
        "%2e%2e",
        "%2f",
        "..\\..",
        "%252e%252e",
        "~",
        "a\x00",
    ]
)
_PATHS = st.builds(
    lambda prefix, segments, sep: prefix + sep.join(segments),
    st.sampled_from(["", "/", "/srv/data/", "/srv/data/sub/", "~/", "./"]),
    st.lists(_SEGMENTS, max_size=8),
    st.sampled_from(["/", "\\", "//"]),
).filter(bool)
_CWDS = st.sampled_from(
    [None, "/srv/data", "/srv/data/sub", "/srv", "/", "rel", "~", "/srv/data/.."]
)
_INSIDE = Policy(PolicySpec(rules=(rule(0, "write_file", "allow", path="/srv/data/*"),)))


def _oracles(path: str, cwd: str | None) -> list[str]:
    """Where a tool could open ``path``: literally (POSIX), or decoded with ``\\`` as ``/``."""
    decoded, decoded_cwd = path, cwd or ""
    for _ in range(4):
        decoded, decoded_cwd = unquote(decoded), unquote(decoded_cwd)
    readings = [(path, cwd or "")]
    readings.append((decoded.replace("\\", "/").split("\x00")[0], decoded_cwd.replace("\\", "/")))
    return [posixpath.normpath(posixpath.join(c, p)) for p, c in readings]


@given(_PATHS, _CWDS)
def test_normalised_paths_never_hold_dot_dot_segments(path: str, cwd: str | None) -> None:
    reading = normalise(path, cwd)
    for value in (reading.value, reading.literal or ""):
        assert ".." not in value.split("/")


@given(_PATHS, _CWDS)
def test_an_allow_on_a_directory_never_matches_outside_it(path: str, cwd: str | None) -> None:
    args = {"path": path} if cwd is None else {"path": path, "cwd": cwd}
    if _INSIDE.evaluate(ToolCall(tool="write_file", arguments=args)).action == "allow":
        for where in _oracles(path, cwd):
            assert where.startswith("/srv/data/"), (where, path, cwd)
