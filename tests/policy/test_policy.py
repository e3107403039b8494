"""The policy engine: decision tables for precedence, scopes, risk and shell commands."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapgate.errors import PolicyError
from tapgate.gate.models import Action, Risk, ToolCall
from tapgate.policy import shell
from tapgate.policy.engine import HAZARD_RULE, Policy
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec


def rule(i: int, tool: str, action: Action, **kw: Any) -> Rule:
    return Rule(tool=tool, action=action, source=f"policy.rules[{i}]", **kw)


def decide(
    policy: Policy, tool: str, agent: str = "a", risk: Risk | None = None, **args: Any
) -> tuple[str, str]:
    v = policy.evaluate(ToolCall(tool=tool, arguments=args, agent=agent, risk=risk))
    return v.action, v.rule


PRECEDENCE = Policy(
    PolicySpec(
        rules=(
            rule(0, "files_*", "allow"),
            rule(1, "files_write", "ask"),
            rule(2, "files_*", "deny", args={"path": "/etc/*"}),
            rule(3, "files_delete", "allow"),
            rule(4, "files_delete", "deny"),
        )
    )
)


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("files_read", {"path": "/home/x"}, ("allow", "policy.rules[0]")),
        ("files_write", {"path": "/home/x"}, ("ask", "policy.rules[1]")),  # ask beats allow
        ("files_write", {"path": "/etc/passwd"}, ("deny", "policy.rules[2]")),  # deny beats ask
        ("files_read", {"path": "/etc/passwd"}, ("deny", "policy.rules[2]")),
        ("files_delete", {"path": "/tmp/x"}, ("deny", "policy.rules[4]")),  # order is irrelevant
        ("files_read", {}, ("allow", "policy.rules[0]")),  # a rule's arg missing: no match
    ],
)
def test_most_restrictive_rule_wins_within_a_scope(
    tool: str, args: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert decide(PRECEDENCE, tool, **args) == expected


SCOPED = Policy(
    PolicySpec(
        rules=(rule(0, "deploy", "deny"), rule(1, "deploy_*", "ask")),
        agents={
            "releaser": (
                Rule(tool="deploy", action="ask", source="policy.agents.releaser.rules[0]"),
            ),
            "bot": (Rule(tool="read", action="allow", source="policy.agents.bot.rules[0]"),),
        },
    )
)


@pytest.mark.parametrize(
    ("agent", "tool", "expected"),
    [
        ("releaser", "deploy", ("ask", "policy.agents.releaser.rules[0]")),  # agent scope first
        ("someone", "deploy", ("deny", "policy.rules[0]")),
        ("bot", "deploy", ("deny", "policy.rules[0]")),  # agent scope had no match: global decides
        ("bot", "read", ("allow", "policy.agents.bot.rules[0]")),
        ("releaser", "deploy_web", ("ask", "policy.rules[1]")),
    ],
)
def test_agent_scope_before_global(agent: str, tool: str, expected: tuple[str, str]) -> None:
    assert decide(SCOPED, tool, agent=agent) == expected


RISKY = Policy(
    PolicySpec(
        tools=(
            ToolSpec(name="read", risk="read_only"),
            ToolSpec(name="write", risk="write"),
            ToolSpec(name="drop", risk="destructive"),
            ToolSpec(name="mcp__prod__*", risk="destructive"),
        )
    )
)


@pytest.mark.parametrize(
    ("tool", "declared", "expected"),
    [
        ("read", None, ("allow", "policy.risk_defaults.read_only")),
        ("write", None, ("ask", "policy.risk_defaults.write")),
        ("drop", None, ("deny", "policy.risk_defaults.destructive")),
        ("mcp__prod__query", None, ("deny", "policy.risk_defaults.destructive")),
        ("unknown", None, ("ask", "policy.risk_defaults.write")),  # unknown tools are write
        ("unknown", "read_only", ("allow", "policy.risk_defaults.read_only")),  # declared risk
        ("drop", "read_only", ("deny", "policy.risk_defaults.destructive")),  # config wins
    ],
)
def test_risk_defaults(tool: str, declared: Risk | None, expected: tuple[str, str]) -> None:
    assert decide(RISKY, tool, risk=declared) == expected


def test_risk_defaults_are_configurable() -> None:
    policy = Policy(
        PolicySpec(risk_actions={"read_only": "ask", "write": "deny", "destructive": "deny"})
    )
    assert decide(policy, "anything") == ("deny", "policy.risk_defaults.write")
    assert decide(policy, "x", risk="read_only")[0] == "ask"


def test_verdict_carries_approvers_timeout_and_reason() -> None:
    policy = Policy(
        PolicySpec(
            rules=(rule(0, "deploy", "ask", approvers=("oncall",), timeout=30, reason="prod!"),),
            default_timeout=99,
            default_approvers=("admins",),
        )
    )
    v = policy.evaluate(ToolCall(tool="deploy"))
    assert (v.approvers, v.timeout, v.reason) == (("oncall",), 30, "prod!")
    d = policy.evaluate(ToolCall(tool="other"))
    assert (d.approvers, d.timeout) == (("admins",), 99)
    assert "no rule matched" in d.reason


def test_argument_globs_match_json_for_non_strings() -> None:
    policy = Policy(
        PolicySpec(
            rules=(
                rule(0, "pay", "deny", args={"amount": "[1-9][0-9][0-9][0-9]*"}),
                rule(1, "pay", "allow"),
                rule(2, "flag", "allow", args={"on": "true"}),
            )
        )
    )
    assert decide(policy, "pay", amount=5000)[0] == "deny"
    assert decide(policy, "pay", amount=50)[0] == "allow"
    assert decide(policy, "flag", on=True)[0] == "allow"
    assert decide(policy, "flag", on=False)[0] == "ask"


def test_globs_are_case_sensitive_and_cross_slashes() -> None:
    policy = Policy(PolicySpec(rules=(rule(0, "read", "allow", args={"path": "/srv/*"}),)))
    assert decide(policy, "read", path="/srv/a/b/c")[0] == "allow"
    assert decide(policy, "READ", path="/srv/a")[0] == "ask"


def test_empty_glob_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match=r"policy.rules\[0\].tool"):
        Policy(PolicySpec(rules=(rule(0, "", "allow"),)))


def test_many_tool_names_beyond_the_cache() -> None:
    policy = Policy(PolicySpec(rules=(rule(0, "t_1*", "deny"), rule(1, "t_*", "allow"))))
    for i in range(5000):
        expected = "deny" if str(i).startswith("1") else "allow"
        assert decide(policy, f"t_{i}")[0] == expected


SHELL = Policy(
    PolicySpec(
        tools=(ToolSpec(name="Bash", risk="write", shell="command"),),
        rules=(
            rule(0, "Bash", "allow", args={"command": "git status*"}),
            rule(1, "Bash", "allow", args={"command": "ls*"}),
            rule(2, "Bash", "allow", args={"command": "echo *"}),
            rule(3, "Bash", "allow", args={"command": "cat *"}),
            rule(4, "Bash", "deny", args={"command": "rm -rf *"}),
            rule(5, "Bash", "deny", args={"command": "git push --force*"}),
        ),
    )
)


@pytest.mark.parametrize(
    ("command", "action"),
    [
        ("git status", "allow"),
        ("git status && ls -la", "allow"),
        ("git status && rm -rf /", "deny"),  # an allowed prefix does not allow the rest
        ("ls; rm -rf /tmp/x", "deny"),
        ("ls | cat -n", "allow"),
        ("ls || make", "ask"),  # make matches nothing: write default
        ("ls\nrm -rf /", "deny"),
        ("echo $(rm -rf /)", "deny"),  # substitutions are judged too
        ("echo `rm -rf /`", "deny"),
        ("echo $(ls)", "ask"),  # all parts allowed, but substitution is never auto-allowed
        ("cat <(ls)", "ask"),
        ("ls > listing.txt", "ask"),  # redirection to a file
        ("ls 2>&1", "allow"),
        ("ls >/dev/null", "allow"),
        ('echo "unterminated', "ask"),
        ("sudo rm -rf /", "deny"),
        ("FOO=1 rm -rf /", "deny"),
        ("bash -c 'rm -rf /'", "deny"),
        ("git push --force origin main", "deny"),
        ("/bin/rm -rf /", "deny"),  # a path does not dodge a rule on the command name
        ("./ls", "ask"),
        ("", "ask"),
    ],
)
def test_shell_commands_are_judged_part_by_part(command: str, action: str) -> None:
    assert SHELL.evaluate(ToolCall(tool="Bash", arguments={"command": command})).action == action


def test_shell_hazard_names_the_builtin_rule_and_is_not_grantable() -> None:
    v = SHELL.evaluate(ToolCall(tool="Bash", arguments={"command": "echo $(ls)"}))
    assert v.rule == HAZARD_RULE and not v.grantable
    assert "command substitution" in v.reason
    plain = SHELL.evaluate(ToolCall(tool="Bash", arguments={"command": "make build"}))
    assert plain.grantable


def test_shell_verdict_names_the_denying_part() -> None:
    v = SHELL.evaluate(ToolCall(tool="Bash", arguments={"command": "git status && rm -rf /"}))
    assert v.rule == "policy.rules[4]" and "rm -rf /" in v.reason


def test_shell_fingerprint_is_the_command_prefix() -> None:
    fp = SHELL.fingerprint(ToolCall(tool="Bash", arguments={"command": "npm run build --prod"}))
    assert fp == SHELL.fingerprint(ToolCall(tool="Bash", arguments={"command": "npm run lint"}))
    assert fp != SHELL.fingerprint(ToolCall(tool="Bash", arguments={"command": "npm test"}))


def test_named_argument_fingerprint() -> None:
    policy = Policy(PolicySpec(tools=(ToolSpec(name="Edit", fingerprint=("file_path",)),)))
    a = policy.fingerprint(ToolCall(tool="Edit", arguments={"file_path": "a.py", "new": "1"}))
    b = policy.fingerprint(ToolCall(tool="Edit", arguments={"file_path": "a.py", "new": "2"}))
    c = policy.fingerprint(ToolCall(tool="Edit", arguments={"file_path": "b.py", "new": "1"}))
    assert a == b != c
    d = policy.fingerprint(ToolCall(tool="Other", arguments={"x": 1}))
    assert d != policy.fingerprint(ToolCall(tool="Other", arguments={"x": 2}))


SAFE_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789/._-", min_size=1, max_size=8)
ALLOWED = st.builds(lambda w: f"ls {w}", SAFE_WORD) | st.builds(lambda w: f"echo {w}", SAFE_WORD)
SEPARATORS = st.sampled_from([" && ", " || ", "; ", " | ", "\n", " & "])


@st.composite
def commands_with_a_denied_part(draw: st.DrawFn) -> str:
    parts = draw(st.lists(ALLOWED, min_size=0, max_size=4))
    denied = draw(st.sampled_from(["rm -rf /", "rm -rf ~", "git push --force", "sudo rm -rf /x"]))
    wrapped = draw(st.sampled_from(["{}", "$({})", "`{}`", "bash -c '{}'", "( {} )", "{{ {}; }}"]))
    parts.insert(draw(st.integers(0, len(parts))), wrapped.format(denied))
    seps = [draw(SEPARATORS) for _ in parts]
    return "".join(p + s for p, s in zip(parts, seps, strict=True)).rstrip(" &|;\n")


@given(commands_with_a_denied_part())
def test_no_command_with_a_denied_part_is_ever_allowed(command: str) -> None:
    v = SHELL.evaluate(ToolCall(tool="Bash", arguments={"command": command}))
    assert v.action == "deny", command


@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_and_hazards_never_allow(command: str) -> None:
    v = SHELL.evaluate(ToolCall(tool="Bash", arguments={"command": command}))
    if v.action == "allow":
        assert shell.parse(command).safe, command
