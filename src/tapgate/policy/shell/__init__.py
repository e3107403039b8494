"""Shell command lines, split into the simple commands they would run.

The policy judges a shell tool call command by command (decision 0002-shell-commands-parsed):
``git status && rm -rf /`` is two commands, and a rule allowing ``git *`` must
not allow the second. A glob over the whole string cannot see that, and neither
:mod:`shlex` (it does not know ``$(``) nor a regex finds commands hidden in
substitutions, subshells, ``bash -c '...'``, ``eval`` or wrappers like ``sudo``.

The package is conservative by design: :func:`parse` never raises, stays
roughly linear on any input, and names as a *hazard* every construct whose
effect it cannot fully see (substitutions, redirections to files,
here-documents, nested shells, control structures, input it cannot parse). A
line with hazards is never auto-allowed; its commands are still returned, so
deny rules apply to them all the same.

Each concept has a module of its own behind this one entry point:

- ``_lexer``: the characters: quoting, expansions, operators, here-documents;
- ``_hazards``: the words of one simple command: assignments, wrappers,
  nested shells, ``eval``; what it runs and why it is a hazard;
- ``_model``: the records both produce and the reserved words both know.
"""

from __future__ import annotations

from tapgate.policy.shell._lexer import Lexer
from tapgate.policy.shell._model import Findings, ShellParse, SimpleCommand

__all__ = ["ShellParse", "SimpleCommand", "parse"]


def parse(command: str) -> ShellParse:
    """Split ``command`` into simple commands and hazards; never raises (it is model output)."""
    found = Findings(budget=4 * len(command) + 65536)
    try:
        Lexer(command, found, 0).run()
    except Exception:  # fail closed: a parser bug must not crash the gate or allow the line
        found.hazard("unparsable: internal parser error")
    return ShellParse(tuple(found.commands), tuple(found.hazards))
