"""What the lexer and the hazard rules share: the records they produce and the words they agree on.

Kept apart so that the rules do not depend on one particular lexer: the
hand-written lexer feeds them today, and a different one (tree-sitter-bash was
tried, see docs/policy.md) can be measured against it under the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "CONTROL",
    "MAX_DEPTH",
    "STOP",
    "STRIP",
    "Findings",
    "ShellParse",
    "SimpleCommand",
    "Word",
]

MAX_DEPTH = 20
CONTROL = "shell control structure"
# Reserved words that may lead a simple command and are dropped from it ...
STRIP = frozenset({"if", "then", "elif", "else", "do", "while", "until", "!", "{", "coproc"})
# ... and those after which the words are not a command the rules can judge.
STOP = frozenset({"for", "case", "select", "done", "fi", "esac", "}", "[[", "]]", "in"})

Word = tuple[str, str]
"""One word as the lexer read it: (value without quotes, source text)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the line would run: the unit that rule globs are matched against.

    ``words`` have quotes removed, escapes resolved and leading ``VAR=value``
    assignments dropped; substitutions stay as their source text (``$(date)``).
    """

    words: tuple[str, ...]

    @property
    def text(self) -> str:
        """The words joined by single spaces, so ``rm  -rf '/'`` matches ``rm -rf /``."""
        return " ".join(self.words)


@dataclass(frozen=True, slots=True)
class ShellParse:
    """Every simple command of a line, in order, and why it must not be auto-allowed.

    ``commands`` includes commands nested in substitutions, subshells, nested
    shells and wrappers, so deny rules see them; ``hazards`` are short reasons,
    de-duplicated, in the order first found.
    """

    commands: tuple[SimpleCommand, ...]
    hazards: tuple[str, ...]

    @property
    def safe(self) -> bool:
        """No hazards: the commands are all the line would run, so rules may allow it."""
        return not self.hazards


@dataclass(slots=True)
class Findings:
    """What one :func:`~tapgate.policy.shell.parse` call has found so far, across nested texts.

    One instance is shared by every nested parse of a line, so the budget bounds
    the work of the whole line (``eval`` of ``eval`` of ... stays linear).
    """

    budget: int  # characters that re-parsed texts (eval, bash -c, ...) may still take
    commands: list[SimpleCommand] = field(default_factory=list)
    hazards: list[str] = field(default_factory=list)

    def hazard(self, reason: str) -> None:
        """Record ``reason`` once, keeping the order in which reasons were first found."""
        if reason not in self.hazards:
            self.hazards.append(reason)
