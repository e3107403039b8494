"""tree-sitter-bash against the hand-written shell lexer, under the same hazard rules.

Run: ``python benchmarks/bench_shell_lexers.py`` (speed: both lexers over the
same corpus, interleaved, ``--runs`` rounds, the ratio per round and its spread)
and ``python benchmarks/bench_shell_lexers.py --tests`` (the shell and policy
tests, property tests included, with tree-sitter swapped in for the lexer).

We asked whether tree-sitter-bash (MIT) could replace the hand-written
lexer; it would be adopted only if it passed every shell test and was not
slower. This script is the trial, kept so the verdict in docs/policy.md can be
reproduced. tree-sitter is not a dependency of tapgate: without it installed
(``pip install tree-sitter tree-sitter-bash``) the script prints a note and
exits 0. The adapter below reaches into tapgate's private shell modules on
purpose: it plugs a second lexer into the seam the rules expose.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from typing import Any

from _util import QUICK_HELP, machine
from tapgate.policy import shell
from tapgate.policy.shell import _hazards, _model, _words

try:
    import tree_sitter_bash
    from tree_sitter import Language, Node, Parser

    HAVE_TREE_SITTER = True
except ImportError:  # the trial is optional; tapgate does not depend on tree-sitter
    HAVE_TREE_SITTER = False

CORPUS = [
    "git status",
    "ls -la src/tapgate",
    "npm run build && npm test",
    "git log --oneline -n 20 | head -5",
    "python -m pytest -q tests/policy/test_shell.py -k 'not slow'",
    "cd /work && make -j4 2>&1 | tail -n 50",
    'grep -rn "def parse" src/ --include=*.py',
    "sudo -u deploy systemctl restart web.service",
    "FOO=1 BAR=2 env -i timeout 10 ./run.sh --flag=value",
    "find . -name '*.pyc' -delete; echo done",
    'echo "today is $(date +%F)" > /tmp/out.txt',
    "bash -c 'curl -s https://example.com | sh'",
    'for f in *.py; do ruff check "$f"; done',
    "cat <<EOF > notes.md\n# $(whoami)\nEOF\n",
    "docker compose -f deploy/compose.yaml up -d --build web worker",
    "kubectl get pods -n prod -o json | jq '.items[] | .metadata.name'",
]

_DQ_ESCAPE = re.compile(r'\\([\\"$`\n])')
_CONTROL_NODES = frozenset(
    {
        "if_statement",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "function_definition",
        "test_command",
        "negated_command",
    }
)
_WORD_NODES = frozenset({"word", "number"})


class TreeSitterLexer:
    """tree-sitter-bash's tree, walked into the words the hazard rules take."""

    def __init__(self, parser: Any, found: _model.Findings, depth: int) -> None:
        self.parser, self.found, self.depth = parser, found, depth

    def run(self, text: str) -> None:
        self._walk(self.parser.parse(text.encode()).root_node)

    def reparse(self, text: str) -> None:
        self.found.budget -= len(text)
        if self.depth >= _model.MAX_DEPTH or self.found.budget < 0:
            self.found.hazard("unparsable: nesting too deep")
            return
        TreeSitterLexer(self.parser, self.found, self.depth + 1).run(text)

    def _walk(self, node: Node) -> None:
        kind = node.type
        if node.is_error or node.is_missing:
            self.found.hazard("unparsable: syntax error")
        if kind == "command":
            self._command(node)
            return
        if kind in _CONTROL_NODES:
            self.found.hazard(_model.CONTROL)
        elif kind == "file_redirect":
            self._redirect(node)
        elif kind == "heredoc_redirect":
            self.found.hazard("here-document")
        elif kind == "command_substitution":
            self.found.hazard("command substitution")
        elif kind == "process_substitution":
            self.found.hazard("process substitution")
        elif kind == "variable_assignment":
            raw = _text(node)
            self._walk_inside(node)
            _hazards.judge([(raw, raw)], self.found, self.reparse)
            return
        elif kind == "declaration_command":
            words = [self._word(c) for c in node.children]
            _hazards.judge(words, self.found, self.reparse)
            return
        for child in node.children:
            self._walk(child)

    def _command(self, node: Node) -> None:
        words: list[_model.Word] = []
        for child in node.children:
            if child.type == "variable_assignment":
                raw = _text(child)
                self._walk_inside(child)
                words.append((raw, raw))
            elif child.type == "command_name":
                words.append(self._word(child.children[0]))
            elif child.type.endswith("redirect"):
                self._walk(child)
            elif child.is_named:
                words.append(self._word(child))
        _hazards.judge(words, self.found, self.reparse)

    def _redirect(self, node: Node) -> None:
        op = next((_text(c) for c in node.children if not c.is_named), "")
        target = node.child_by_field_name("destination")
        value = self._word(target)[0] if target is not None else ""
        dup = op == ">&" and (value == "-" or value.rstrip("-").isdigit())
        if not (dup or value == "/dev/null" or op in ("<", "<&")):
            self.found.hazard("output redirection to a file")

    def _word(self, node: Node) -> _model.Word:
        """(value, source) of a word node; substitutions inside it are walked too."""
        raw = _text(node)
        self._walk(node)
        return _value(node, raw), raw

    def _walk_inside(self, node: Node) -> None:
        for child in node.children:
            self._walk(child)


def _text(node: Node) -> str:
    return (node.text or b"").decode()


def _value(node: Node, raw: str) -> str:
    kind = node.type
    if kind in _WORD_NODES:
        return re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.S)
    if kind == "raw_string":
        return raw[1:-1]
    if kind == "string":
        return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw[1:-1])
    if kind == "ansi_c_string":
        return _words._ANSI.sub(_words._ansi_escape, raw[2:-1])
    if kind == "concatenation":
        return "".join(_value(c, _text(c)) for c in node.children)
    return raw  # expansions and substitutions stay as their source text


def tree_sitter_parse(parser: Any) -> Any:
    """A drop-in for :func:`tapgate.policy.shell.parse` that lexes with tree-sitter."""

    def parse(command: str) -> shell.ShellParse:
        found = _model.Findings(budget=4 * len(command) + 65536)
        try:
            TreeSitterLexer(parser, found, 0).run(command)
        except Exception:  # the same fail-closed contract as the real parse()
            found.hazard("unparsable: internal parser error")
        return shell.ShellParse(tuple(found.commands), tuple(found.hazards))

    return parse


def _per_line_us(parse: Any, lines: list[str], number: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(number):
        for line in lines:
            parse(line)
    return (time.perf_counter_ns() - start) / number / len(lines) / 1000


def speed(parser: Any, runs: int, number: int) -> int:
    impls = {"hand-written": shell.parse, "tree-sitter": tree_sitter_parse(parser)}
    for parse in impls.values():  # warm up
        _per_line_us(parse, CORPUS, 20)
    print(f"# shell lexers, {len(CORPUS)} command lines x {number} per round ({machine()})")
    print(f"{'round':>5} {'hand-written us':>16} {'tree-sitter us':>15} {'ratio ts/hand':>14}")
    ratios = []
    for i in range(runs):
        order = list(impls) if i % 2 == 0 else list(reversed(impls))  # interleaved
        t = {name: _per_line_us(impls[name], CORPUS, number) for name in order}
        ratios.append(t["tree-sitter"] / t["hand-written"])
        hand, tree = t["hand-written"], t["tree-sitter"]
        print(f"{i + 1:>5} {hand:>16.1f} {tree:>15.1f} {ratios[-1]:>14.2f}")
    print(
        f"ratio tree-sitter / hand-written: median {statistics.median(ratios):.2f}, "
        f"spread {min(ratios):.2f} – {max(ratios):.2f} over {runs} rounds"
    )
    return 0


def run_tests(parser: Any, extra: list[str]) -> int:
    import pytest

    shell.parse = tree_sitter_parse(parser)  # the trial's swap
    args = [
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/policy/test_shell.py",
        "tests/policy/test_policy.py",
    ]
    return int(pytest.main([*args, *extra]))


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    cli.add_argument("--tests", action="store_true", help="run the shell tests on tree-sitter")
    cli.add_argument("--runs", type=int, default=5)
    cli.add_argument("--number", type=int, default=300)
    cli.add_argument("--quick", action="store_true", help=QUICK_HELP)
    opts, extra = cli.parse_known_args()
    if opts.quick:
        opts.runs, opts.number = 2, 10
    if not HAVE_TREE_SITTER:
        print("tree-sitter is not installed (pip install tree-sitter tree-sitter-bash): skipped")
        return 0
    parser = Parser(Language(tree_sitter_bash.language()))
    if opts.tests:
        return run_tests(parser, extra)
    return speed(parser, opts.runs, opts.number)


if __name__ == "__main__":
    sys.exit(main())
