"""Rules that cannot silently miss: argument names a tool cannot have, path globs as paths are read.

A rule's argument glob is matched against the argument of that name; a name
the tool never sends (``args: {cmd: "sudo *"}`` on a shell tool whose
argument is ``command``) makes the rule match nothing, so a deny never fires
and nothing says so. And path arguments are judged normalised
(:mod:`tapgate.policy.paths`: ``./notes/a.txt`` is ``notes/a.txt``), so a glob
written the way people write paths (``./notes/*``) matched nothing either.

This module owns both answers, free of YAML so the config loader (which
reports :func:`problems` with their YAML paths) and :class:`~tapgate.policy.engine.Policy`
(which compiles :func:`normalise_rules`) agree:

- a tool's arguments are *known* when its spec declares ``arguments``, or
  when it is a shell tool (its command argument, :data:`SHELL_ARGUMENTS`,
  and the names its ``paths`` and ``fingerprint`` use); a rule that names
  another argument of such a tool is refused, with the closest known name;
- a glob on a path argument is normalised like the path (``.`` and repeated
  ``/`` go, ``..`` removes a segment); one that cannot be (it climbs above
  its root, or holds a backslash, a percent escape or a NUL byte, which a
  path is judged decoded) is refused with the form that works.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tapgate.errors import PolicyError
from tapgate.policy.matching import is_glob
from tapgate.policy.paths import CWD_ARGUMENT, DEFAULT_PATH_ARGUMENTS, normalise
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec

__all__ = [
    "SHELL_ARGUMENTS",
    "known_arguments",
    "normalise_glob",
    "normalise_rules",
    "path_arguments",
    "problems",
    "tool_for_rule",
]

SHELL_ARGUMENTS: tuple[str, ...] = (CWD_ARGUMENT, "description", "timeout", "run_in_background")
"""What a shell tool carries beside its command: Claude Code's ``Bash`` and a working directory.

A shell tool with other arguments declares them (``policy.tools.NAME.arguments``).
"""


def tool_for_rule(tools: Sequence[ToolSpec], pattern: str) -> ToolSpec | None:
    """The spec a rule's ``tool`` refers to, when that can be known at load.

    The spec of that exact name (a glob rule written under the same glob as
    the spec counts); for a rule naming one tool, the first spec glob that
    matches it, as :meth:`Policy.tool_spec` picks. A rule glob covering tools
    of several specs refers to none in particular: ``None``.
    """
    for tool in tools:
        if tool.name == pattern:
            return tool
    if is_glob(pattern):
        return None
    return next(
        (t for t in tools if is_glob(t.name) and fnmatch.fnmatchcase(pattern, t.name)), None
    )


def known_arguments(tool: ToolSpec) -> frozenset[str] | None:
    """Every argument ``tool`` can have, or ``None`` when its spec does not say."""
    if tool.arguments is not None:
        named = tool.arguments
    elif tool.shell is not None:
        named = (tool.shell, *SHELL_ARGUMENTS)
    else:
        return None
    return frozenset((*named, *tool.fingerprint, *(tool.paths or ())))


def path_arguments(tool: ToolSpec | None) -> tuple[str, ...]:
    """The arguments of ``tool`` that are file paths, as the policy reads them."""
    if tool is None or tool.paths is None:
        return DEFAULT_PATH_ARGUMENTS
    return tool.paths


def normalise_glob(pattern: str) -> str:
    """``pattern`` as the path values it should match are written once normalised.

    Raises ``ValueError`` (the message says what to write instead) for a
    glob no normalised path could match as written.
    """
    reading = normalise(pattern)
    if not reading.hazards:
        return reading.value
    hazard = reading.hazards[0]
    if hazard.startswith("climbs above"):
        return _refuse(
            f"this path glob {hazard}, which no path does once its '..' are resolved; "
            "write the path it means without '..'"
        )
    return _refuse(
        f"this path glob has {hazard.removeprefix('climbs above ')}, and paths are judged "
        f"decoded, with '\\' read as '/': write {reading.value!r}"
    )


def _refuse(message: str) -> str:
    raise ValueError(message)


def _rules(spec: PolicySpec) -> list[Rule]:
    return [*spec.rules, *(rule for rules in spec.agents.values() for rule in rules)]


def problems(spec: PolicySpec) -> list[tuple[str, str]]:
    """Every rule argument that could never match: ``(YAML path, what is wrong)`` pairs."""
    found: list[tuple[str, str]] = []
    for rule in _rules(spec):
        tool = tool_for_rule(spec.tools, rule.tool)
        known = known_arguments(tool) if tool is not None else None
        paths = path_arguments(tool)
        for name, pattern in rule.args.items():
            where = f"{rule.source}.args.{name}"
            if known is not None and name not in known:
                assert tool is not None
                found.append((where, _unknown(rule.tool, tool, name, known)))
            elif name in paths:
                try:
                    normalise_glob(pattern)
                except ValueError as exc:
                    found.append((where, str(exc)))
    found += [(f"{t.source}", m) for t in spec.tools for m in _own_names(t)]
    return found


def _unknown(named: str, tool: ToolSpec, name: str, known: frozenset[str]) -> str:
    names = sorted(known)
    close = _closest(name, names)
    hint = f" (did you mean {close!r}?)" if close else ""
    declare = f"{tool.source}.arguments" if tool.source else "the tool's arguments"
    return (
        f"tool {named!r} has no argument {name!r}{hint}, so this rule would never match; "
        f"its arguments: {', '.join(names)} (declare others under {declare})"
    )


def _closest(name: str, names: Sequence[str]) -> str | None:
    """The known name ``name`` most likely abbreviates or misspells.

    An abbreviation first (``cmd`` is ``command``, whose letters it keeps in
    order, not ``cwd``, which a plain similarity ratio prefers), then difflib's pick.
    """
    wanted = name.lower()
    spelled = [n for n in names if _keeps_letters(wanted, n.lower())]
    if spelled:
        return min(spelled, key=len)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return close[0] if close else None


def _keeps_letters(short: str, long: str) -> bool:
    letters = iter(long)
    return all(c in letters for c in short)


def _own_names(tool: ToolSpec) -> list[str]:
    """A spec's ``shell``, ``paths`` and ``fingerprint`` must be among its declared arguments."""
    if tool.arguments is None:
        return []
    declared = set(tool.arguments)
    used = [("shell", tool.shell)] if tool.shell is not None else []
    used += [("paths", n) for n in tool.paths or ()] + [
        ("fingerprint", n) for n in tool.fingerprint
    ]
    return [
        f"{field} names {name!r}, which is not among its arguments ({', '.join(tool.arguments)})"
        for field, name in used
        if name not in declared
    ]


def normalise_rules(spec: PolicySpec) -> PolicySpec:
    """``spec`` with every path-argument glob normalised (``./notes/*`` → ``notes/*``).

    Raises :class:`~tapgate.errors.PolicyError` for a glob that cannot be
    (the config loader refuses those first, with their YAML paths).
    """

    def rules(scope: Sequence[Rule]) -> tuple[Rule, ...]:
        return tuple(_normalised(rule, spec.tools) for rule in scope)

    agents: Mapping[str, tuple[Rule, ...]] = {n: rules(r) for n, r in spec.agents.items()}
    return replace(spec, rules=rules(spec.rules), agents=agents)


def _normalised(rule: Rule, tools: Sequence[ToolSpec]) -> Rule:
    paths = path_arguments(tool_for_rule(tools, rule.tool))
    if not rule.args or all(name not in paths for name in rule.args):
        return rule
    args: dict[str, str] = {}
    for name, pattern in rule.args.items():
        try:
            args[name] = normalise_glob(pattern) if name in paths else pattern
        except ValueError as exc:
            raise PolicyError(f"{rule.source}.args.{name}", str(exc)) from None
    return replace(rule, args=args)
