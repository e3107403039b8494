"""Rules that cannot silently miss: unknown argument names, and path globs read as paths are."""

from __future__ import annotations

from typing import Any

import pytest

from tapgate.errors import PolicyError
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rule_checks import normalise_glob, problems
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec

BASH = ToolSpec(name="Bash", shell="command", source="policy.tools.Bash")


def rule(i: int, tool: str, action: Any = "deny", **args: str) -> Rule:
    return Rule(tool=tool, action=action, args=args, source=f"policy.rules[{i}]")


def action(policy: Policy, tool: str, **arguments: Any) -> str:
    return policy.evaluate(ToolCall(tool=tool, arguments=arguments, agent="a")).action


@pytest.mark.parametrize(
    ("glob", "written"),
    [
        ("./notes/*", "./notes/a.txt"),
        ("notes/*", "./notes/a.txt"),
        ("./notes/*", "notes//a.txt"),
        ("/srv//data/./*", "/srv/data/x"),
        ("/srv/data/old/../*", "/srv/data/x"),
    ],
)
def test_a_path_glob_matches_the_paths_it_was_written_for(glob: str, written: str) -> None:
    """``./notes/*`` stopped allowing ``./notes/a.txt`` once paths were judged normalised."""
    policy = Policy(PolicySpec(rules=(rule(0, "Read", "allow", file_path=glob),)))
    assert action(policy, "Read", file_path=written) == "allow"


def test_a_normalised_deny_glob_still_denies_what_it_named() -> None:
    policy = Policy(PolicySpec(rules=(rule(0, "Read", "deny", file_path="./secrets/*"),)))
    assert action(policy, "Read", file_path="./secrets/key") == "deny"
    assert action(policy, "Read", file_path="secrets/../secrets/key") == "deny"


def test_a_glob_on_an_argument_that_is_no_path_is_left_alone() -> None:
    policy = Policy(PolicySpec(rules=(rule(0, "fetch", "allow", url="./x/*"),)))
    assert action(policy, "fetch", url="./x/y") == "allow"
    tools = (ToolSpec(name="Store", paths=("target",)),)
    spec = PolicySpec(tools=tools, rules=(rule(0, "Store", "allow", path="./x/*"),))
    assert action(Policy(spec), "Store", path="./x/y") == "allow"  # path is not one of its paths


def test_a_tools_own_path_arguments_are_normalised() -> None:
    tools = (ToolSpec(name="Store", paths=("target",)),)
    spec = PolicySpec(tools=tools, rules=(rule(0, "Store", "allow", target="./out/*"),))
    assert action(Policy(spec), "Store", target="./out/a") == "allow"


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("../x/*", "climbs above its working directory"),
        ("/../etc/*", "climbs above /"),
        ("notes\\*", "write 'notes/*'"),
        ("notes%2f*", "write 'notes/*'"),
    ],
)
def test_a_glob_no_normalised_path_can_match_is_refused(glob: str, message: str) -> None:
    with pytest.raises(ValueError, match="this path glob") as info:
        normalise_glob(glob)
    assert message in str(info.value)
    with pytest.raises(PolicyError, match=r"policy.rules\[0\].args.path"):
        Policy(PolicySpec(rules=(rule(0, "Glob", path=glob),)))
    assert problems(PolicySpec(rules=(rule(0, "Glob", path=glob),)))[0][0] == (
        "policy.rules[0].args.path"
    )


def test_a_shell_tools_unknown_argument_is_a_problem_with_a_did_you_mean() -> None:
    """``args: {cmd: "sudo *"}`` on a tool whose argument is ``command`` never denied anything."""
    spec = PolicySpec(tools=(BASH,), rules=(rule(0, "Bash", cmd="sudo *"),))
    [(where, message)] = problems(spec)
    assert where == "policy.rules[0].args.cmd"
    assert "tool 'Bash' has no argument 'cmd' (did you mean 'command'?)" in message
    assert "declare others under policy.tools.Bash.arguments" in message


@pytest.mark.parametrize("name", ["command", "cwd", "description", "timeout"])
def test_a_shell_tools_known_arguments_are_fine(name: str) -> None:
    spec = PolicySpec(tools=(BASH,), rules=(rule(0, "Bash", **{name: "x*"}),))
    assert problems(spec) == []


def test_declared_arguments_are_the_tools_and_a_spec_glob_covers_a_named_tool() -> None:
    github = ToolSpec(
        name="mcp__github__*", arguments=("owner", "repo", "title"), source="policy.tools.gh"
    )
    spec = PolicySpec(
        tools=(github,),
        rules=(
            rule(0, "mcp__github__create_issue", repo="secret-*"),
            rule(1, "mcp__github__create_issue", repository="secret-*"),
            rule(2, "mcp__github__*", repositry="x"),
            rule(3, "mcp__*", anything="x"),  # covers tools of no one spec: not checked
        ),
        agents={"bot": (rule(0, "mcp__github__delete", ownr="me"),)},
    )
    found = dict(problems(spec))
    assert set(found) == {
        "policy.rules[1].args.repository",
        "policy.rules[2].args.repositry",
        "policy.rules[0].args.ownr",  # the agent's rule, by its own source
    }
    assert "(did you mean 'repo'?)" in found["policy.rules[1].args.repository"]


def test_a_tool_without_declared_arguments_is_not_second_guessed() -> None:
    spec = PolicySpec(tools=(ToolSpec(name="deploy"),), rules=(rule(0, "deploy", env="prod"),))
    assert problems(spec) == []


def test_a_specs_own_names_must_be_among_its_declared_arguments() -> None:
    tool = ToolSpec(
        name="run", shell="cmd", paths=("dir",), arguments=("command",), source="policy.tools.run"
    )
    found = problems(PolicySpec(tools=(tool,)))
    assert [w for w, _ in found] == ["policy.tools.run", "policy.tools.run"]
    assert "shell names 'cmd', which is not among its arguments (command)" in found[0][1]
