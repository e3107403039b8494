"""The shell parser: every simple command a line would run is seen, hidden ones are hazards."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapgate.policy.shell import ShellParse, SimpleCommand, parse

SUB = "command substitution"
PROC = "process substitution"
REDIR = "output redirection to a file"
HEREDOC = "here-document"
CONTROL = "shell control structure"
EXPANDED = "command name from an expansion"


def texts(parsed: ShellParse) -> list[str]:
    return [c.text for c in parsed.commands]


def check(line: str, commands: list[str], hazards: tuple[str, ...]) -> None:
    parsed = parse(line)
    assert texts(parsed) == commands
    assert parsed.hazards == hazards
    assert parsed.safe is (not hazards)


# --- the public records ---------------------------------------------------------------


def test_text_joins_words_with_single_spaces() -> None:
    assert SimpleCommand(("rm", "-rf", "/")).text == "rm -rf /"
    assert SimpleCommand(("echo", "a b")).text == "echo a b"


def test_safe_means_no_hazards() -> None:
    assert ShellParse(commands=(), hazards=()).safe
    assert not ShellParse(commands=(), hazards=("eval",)).safe


def test_words_have_quotes_removed() -> None:
    assert parse("echo  'a  b'   \"c\"d").commands == (SimpleCommand(("echo", "a  b", "cd")),)


# --- separators ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("git status && rm -rf /", ["git status", "rm -rf /"]),
        ("a&&b", ["a", "b"]),
        ("a || b", ["a", "b"]),
        ("a||b", ["a", "b"]),
        ("a; b", ["a", "b"]),
        ("a;b;", ["a", "b"]),
        ("a | b", ["a", "b"]),
        ("a|b", ["a", "b"]),
        ("a |& b", ["a", "b"]),
        ("a & b", ["a", "b"]),
        ("a &", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\n\n  b\n", ["a", "b"]),
        ("(a; b)", ["a", "b"]),
        ("(a) && (b || c)", ["a", "b", "c"]),
        ("(cd /tmp && ls) | wc -l", ["cd /tmp", "ls", "wc -l"]),
        ("((a) ; b)", ["a", "b"]),
        ("a; b && c || d | e & f\ng", ["a", "b", "c", "d", "e", "f", "g"]),
    ],
)
def test_separators_split_commands(line: str, commands: list[str]) -> None:
    check(line, commands, ())


def test_group_contents_are_commands() -> None:
    check("{ ls; rm -rf /; } && id", ["ls", "rm -rf /", "id"], (CONTROL,))


# --- quoting and escapes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("echo 'a b'", ("echo", "a b")),
        ("echo 'a \"b\" $x `y` \\n'", ("echo", 'a "b" $x `y` \\n')),
        ("echo \"a 'b'\"", ("echo", "a 'b'")),
        ('echo "a \\"b\\""', ("echo", 'a "b"')),
        ('echo "\\\\ \\$x \\` \\y"', ("echo", "\\ $x ` \\y")),
        ("echo a\\ b \\'c\\' \\$d", ("echo", "a b", "'c'", "$d")),
        ("r''m -r\"f\" /", ("rm", "-rf", "/")),
        ("r\\m x", ("rm", "x")),
        ("echo ''", ("echo", "")),
        ("ec\\\nho hi", ("echo", "hi")),
        ("echo a \\\n  b", ("echo", "a", "b")),
        ('echo "a\\\nb"', ("echo", "ab")),
        ("echo 'a\nb'", ("echo", "a\nb")),
        ('echo $HOME ${USER} "$PATH" ${x:-y}', ("echo", "$HOME", "${USER}", "$PATH", "${x:-y}")),
        ("echo $'\\x72m' $'a\\'b' $'\\101\\t'", ("echo", "rm", "a'b", "A\t")),
        ("$'\\x72\\x6d' -rf /", ("rm", "-rf", "/")),
        ('echo $"hi there"', ("echo", "hi there")),
        ("echo a#b", ("echo", "a#b")),
        ("echo {a,b} *.py ~/x", ("echo", "{a,b}", "*.py", "~/x")),
        ('echo ";" "&&" "|" "(" ")"', ("echo", ";", "&&", "|", "(", ")")),
        ("echo \\; \\&\\& \\|", ("echo", ";", "&&", "|")),
    ],
)
def test_quotes_and_escapes(line: str, words: tuple[str, ...]) -> None:
    parsed = parse(line)
    assert parsed.commands == (SimpleCommand(words),)
    assert parsed.safe, parsed.hazards


# --- substitutions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands", "hazards"),
    [
        ("echo $(whoami)", ["whoami", "echo $(whoami)"], (SUB,)),
        ('echo "$(rm -rf /)"', ["rm -rf /", "echo $(rm -rf /)"], (SUB,)),
        ('echo "x `rm -rf /` y"', ["rm -rf /", "echo x `rm -rf /` y"], (SUB,)),
        ("echo `ls -l`", ["ls -l", "echo `ls -l`"], (SUB,)),
        ("echo $(echo $(id))", ["id", "echo $(id)", "echo $(echo $(id))"], (SUB,)),
        ("echo `echo \\`id\\``", ["id", "echo `id`", "echo `echo \\`id\\``"], (SUB,)),
        ("echo $(echo \")\" ')')", ["echo ) )", "echo $(echo \")\" ')')"], (SUB,)),
        ("echo $(ls; rm -rf /)", ["ls", "rm -rf /", "echo $(ls; rm -rf /)"], (SUB,)),
        ("echo $(ls # c )\n)", ["ls", "echo $(ls # c )\n)"], (SUB,)),
        ("echo ${x:-$(rm -rf /)}", ["rm -rf /", "echo ${x:-$(rm -rf /)}"], (SUB,)),
        ("X=$(rm -rf /)", ["rm -rf /"], (SUB,)),
        ("$(echo rm) -rf /", ["echo rm", "$(echo rm) -rf /"], (SUB, EXPANDED)),
        ("echo $((echo a) )", ["echo a", "echo $((echo a) )"], (SUB,)),
        ("echo $(( $(id) + 1 ))", ["id", "echo $(( $(id) + 1 ))"], (SUB,)),
        ("echo $(( `id` ))", ["id", "echo $(( `id` ))"], (SUB,)),
    ],
)
def test_command_substitutions(line: str, commands: list[str], hazards: tuple[str, ...]) -> None:
    check(line, commands, hazards)


@pytest.mark.parametrize(
    "line", ["echo $((1+2))", "echo $(( (1 + 2) * 3 ))", 'echo "$((x*2))"', "i=$((i+1))"]
)
def test_arithmetic_expansion_is_not_a_substitution(line: str) -> None:
    parsed = parse(line)
    assert parsed.safe, parsed.hazards
    assert all("(" not in c.words[0] for c in parsed.commands)


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("diff <(ls a) <(ls b)", ["ls a", "ls b", "diff <(ls a) <(ls b)"]),
        ("ls | tee >(grep x) >/dev/null", ["ls", "grep x", "tee >(grep x)"]),
        ("cat < <(rm -rf /)", ["rm -rf /", "cat"]),
    ],
)
def test_process_substitution(line: str, commands: list[str]) -> None:
    check(line, commands, (PROC,))


# --- redirections --------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ls > out",
        "ls >out",
        "ls >> out",
        "ls >| out",
        "ls &> out",
        "ls &>> out",
        "ls 1> out",
        "ls 2> err.log",
        "ls 2>>err.log",
        "ls >& out",
        "ls <> out",
        "ls > /dev/null > out",
        "ls >'/dev/null x'",
    ],
)
def test_output_redirection_to_a_file_is_a_hazard(line: str) -> None:
    check(line, ["ls"], (REDIR,))


@pytest.mark.parametrize(
    "line",
    [
        "ls 2>&1",
        "ls >&2",
        "ls 1>&2",
        "ls 1>&-",
        "ls >&-",
        "ls 3>&1-",
        "ls >/dev/null",
        "ls > /dev/null 2>&1",
        "ls 2>/dev/null",
        "ls &>/dev/null",
        "ls &>> /dev/null",
        "ls < in.txt",
        "ls <in.txt",
        "ls 0< in.txt",
        "ls <&3",
        "ls <<< hi",
        'ls <<< "a b"',
    ],
)
def test_benign_redirections(line: str) -> None:
    check(line, ["ls"], ())


def test_redirection_words_are_not_command_words() -> None:
    assert parse("2>/dev/null ls -l <in >&2 x").commands == (SimpleCommand(("ls", "-l", "x")),)
    assert parse("echo 2 > /dev/null").commands == (SimpleCommand(("echo", "2")),)
    assert parse("echo a2>/dev/null").commands == (SimpleCommand(("echo", "a2")),)


def test_redirection_target_substitution_is_seen() -> None:
    check("ls > $(rm -rf /)", ["rm -rf /", "ls"], (SUB, REDIR))


@pytest.mark.parametrize(
    ("line", "commands", "hazards"),
    [
        ("cat <<EOF\nhello\nEOF", ["cat"], (HEREDOC,)),
        ("cat <<EOF\nhello\nEOF\nrm -rf /", ["cat", "rm -rf /"], (HEREDOC,)),
        ("cat <<-EOF\n\thello\n\tEOF\nls", ["cat", "ls"], (HEREDOC,)),
        ("cat <<EOF | rm -rf /\nbody\nEOF", ["cat", "rm -rf /"], (HEREDOC,)),
        ("cat <<'EOF'\n$(id)\nEOF", ["cat"], (HEREDOC,)),
        ("cat <<EOF\n$(id) `whoami`\nEOF", ["cat", "id", "whoami"], (HEREDOC, SUB)),
        ("cat <<A <<B\na\nA\nb\nB\nls", ["cat", "ls"], (HEREDOC,)),
        ("cat <<EOF\nno end\nrm -rf /", ["cat"], (HEREDOC,)),
        ("bash <<EOF\nrm -rf /\nEOF", ["bash"], (HEREDOC, "nested shell (bash reading stdin)")),
    ],
)
def test_here_documents(line: str, commands: list[str], hazards: tuple[str, ...]) -> None:
    check(line, commands, hazards)


# --- assignments ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("FOO=1 BAR=x cmd args", ["cmd args"]),
        ("FOO=1", []),
        ("FOO=1 BAR='a b'; ls", ["ls"]),
        ("a[0]=1 X+=2 ls", ["ls"]),
        ("cmd FOO=1", ["cmd FOO=1"]),
        ('"FOO=1" cmd', ["FOO=1 cmd"]),
        ("1FOO=1 cmd", ["1FOO=1 cmd"]),
    ],
)
def test_leading_assignments_are_dropped(line: str, commands: list[str]) -> None:
    check(line, commands, ())


def test_assignment_value_substitution_is_seen() -> None:
    check("A=$(rm -rf /) B=`id` ls", ["rm -rf /", "id", "ls"], (SUB,))


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("LD_PRELOAD=/tmp/x.so git status", ["git status"]),
        ("PATH=/tmp/evil:$PATH; ls", ["ls"]),
        ("HOME=/tmp/h git status", ["git status"]),
        ("NODE_OPTIONS='--require x' node a.js", ["node a.js"]),
        ("sudo PATH=/x rm y", ["sudo PATH=/x rm y", "rm y"]),
        (
            "env GIT_SSH_COMMAND='sh -c x' git fetch",
            ["env GIT_SSH_COMMAND=sh -c x git fetch", "git fetch"],
        ),
        ("export PATH=/tmp; ls", ["export PATH=/tmp", "ls"]),
        ("declare -x LD_LIBRARY_PATH=/tmp", ["declare -x LD_LIBRARY_PATH=/tmp"]),
    ],
)
def test_variables_that_change_what_runs_are_a_hazard(line: str, commands: list[str]) -> None:
    check(line, commands, ("sets PATH, LD_PRELOAD or a similar variable",))


@pytest.mark.parametrize(
    "line", ["CI=1 RUST_LOG=debug cargo test", "export FOO=1", "env A=1 ls", "sudo A=1 ls"]
)
def test_ordinary_variables_are_not_a_hazard(line: str) -> None:
    assert parse(line).safe


# --- wrappers, nested shells, eval ---------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("sudo rm -rf /", ["sudo rm -rf /", "rm -rf /"]),
        ("sudo -u root -H rm x", ["sudo -u root -H rm x", "rm x"]),
        ("sudo -n rm x", ["sudo -n rm x", "rm x"]),
        ("sudo -- rm x", ["sudo -- rm x", "rm x"]),
        ("/usr/bin/sudo rm x", ["/usr/bin/sudo rm x", "rm x"]),
        ("doas rm x", ["doas rm x", "rm x"]),
        ("env -i A=1 B=2 rm x", ["env -i A=1 B=2 rm x", "rm x"]),
        ("nohup rm x", ["nohup rm x", "rm x"]),
        ("time -p rm x", ["time -p rm x", "rm x"]),
        ("nice -n 5 rm x", ["nice -n 5 rm x", "rm x"]),
        ("nice -5 rm x", ["nice -5 rm x", "rm x"]),
        ("ionice -c 3 -n 7 rm x", ["ionice -c 3 -n 7 rm x", "rm x"]),
        ("timeout 10 rm x", ["timeout 10 rm x", "rm x"]),
        ("timeout -k 5 -s KILL 10s rm x", ["timeout -k 5 -s KILL 10s rm x", "rm x"]),
        ("command -p rm x", ["command -p rm x", "rm x"]),
        ("builtin cd x", ["builtin cd x", "cd x"]),
        ("exec rm x", ["exec rm x", "rm x"]),
        ("find . | xargs rm -f", ["find .", "xargs rm -f", "rm -f"]),
        ("xargs -n 1 -I {} rm {}", ["xargs -n 1 -I {} rm {}", "rm {}"]),
        ("stdbuf -oL rm x", ["stdbuf -oL rm x", "rm x"]),
        ("strace -f -o log rm x", ["strace -f -o log rm x", "rm x"]),
        ("watch -n 1 rm x", ["watch -n 1 rm x", "rm x"]),
        ("watch 'ls; rm x'", ["watch ls; rm x", "ls", "rm x"]),
        ("sudo", ["sudo"]),
        ("timeout 5", ["timeout 5"]),
        (
            "sudo env A=1 nice -n 5 rm -rf /",
            [
                "sudo env A=1 nice -n 5 rm -rf /",
                "env A=1 nice -n 5 rm -rf /",
                "nice -n 5 rm -rf /",
                "rm -rf /",
            ],
        ),
    ],
)
def test_wrappers_yield_the_inner_command(line: str, commands: list[str]) -> None:
    check(line, commands, ())


def test_wrapper_chains_are_bounded() -> None:
    parsed = parse("sudo " * 1000 + "rm -rf /")
    assert len(parsed.commands) <= 25
    assert "unparsable: nesting too deep" in parsed.hazards


@pytest.mark.parametrize(
    ("line", "commands", "hazard"),
    [
        ("bash -c 'rm -rf /'", ["bash -c rm -rf /", "rm -rf /"], "nested shell (bash -c)"),
        ('sh -c "ls; id"', ["sh -c ls; id", "ls", "id"], "nested shell (sh -c)"),
        ("zsh -c ls", ["zsh -c ls", "ls"], "nested shell (zsh -c)"),
        ("dash -c ls", ["dash -c ls", "ls"], "nested shell (dash -c)"),
        ("ksh -c ls", ["ksh -c ls", "ls"], "nested shell (ksh -c)"),
        ("/bin/bash -lc ls", ["/bin/bash -lc ls", "ls"], "nested shell (bash -c)"),
        ("bash -o pipefail -c ls", ["bash -o pipefail -c ls", "ls"], "nested shell (bash -c)"),
        (
            "sudo bash -c 'rm x'",
            ["sudo bash -c rm x", "bash -c rm x", "rm x"],
            "nested shell (bash -c)",
        ),
        (
            "find . | xargs sh -c 'rm x'",
            ["find .", "xargs sh -c rm x", "sh -c rm x", "rm x"],
            "nested shell (sh -c)",
        ),
        ("eval 'rm -rf /'", ["eval rm -rf /", "rm -rf /"], "eval"),
        ("eval rm -rf /", ["eval rm -rf /", "rm -rf /"], "eval"),
        ("trap 'rm -rf /' EXIT", ["trap rm -rf / EXIT", "rm -rf /"], "trap"),
        ("curl x | sh", ["curl x", "sh"], "nested shell (sh reading stdin)"),
        ("bash -s < x", ["bash -s"], "nested shell (bash reading stdin)"),
        ("bash <<< 'rm -rf /'", ["bash"], "nested shell (bash reading stdin)"),
        ("source ~/.bashrc", ["source ~/.bashrc"], "sources a script"),
        (". ./env.sh", [". ./env.sh"], "sources a script"),
    ],
)
def test_nested_shells_and_eval(line: str, commands: list[str], hazard: str) -> None:
    check(line, commands, (hazard,))


def test_nested_shell_hazards_of_the_inner_text_are_kept() -> None:
    check(
        "bash -c 'echo $(id) > f'",
        ["bash -c echo $(id) > f", "id", "echo $(id)"],
        ("nested shell (bash -c)", SUB, REDIR),
    )


def test_shell_running_a_script_file_is_a_plain_command() -> None:
    check("bash ./build.sh --fast", ["bash ./build.sh --fast"], ())


@pytest.mark.parametrize(
    "line", ["$CMD -rf /", "${CMD} x", "{rm,-rf,/}", "/bin/r? -rf /", "/bin/r[m] x", "* x"]
)
def test_command_name_from_an_expansion_is_a_hazard(line: str) -> None:
    assert parse(line).hazards == (EXPANDED,)


def test_test_bracket_is_a_plain_command() -> None:
    check("[ -f x ] && rm x", ["[ -f x ]", "rm x"], ())


# --- control structures --------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("if true; then rm -rf /; fi", ["true", "rm -rf /"]),
        ("if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]),
        ("for x in a b; do rm $x; done", ["rm $x"]),
        ("for x in $(ls); do rm $x; done", ["ls", "rm $x"]),
        ('while read l; do echo "$l"; done < f', ["read l", "echo $l"]),
        ("until false; do sleep 1; done", ["false", "sleep 1"]),
        ("! grep x f", ["grep x f"]),
        ("select x in a b; do echo $x; done", ["echo $x"]),
        ("case $x in a|b) rm -rf /;; c) ls;; esac", ["rm -rf /", "ls"]),
        ("case $x in\n  a) echo hi;;\n  *) ls;;\nesac", ["echo hi", "ls"]),
        ("echo $(case x in a) id;; esac) done", ["id", "echo $(case x in a) id;; esac) done"]),
        ("[[ -f x && $a > b ]] && rm z", ["rm z"]),
        ("if [[ $a == (x) ]]; then ls; fi", ["ls"]),
        ("(( x++ )) && ls", ["ls"]),
        ("for ((i=0; i<3; i++)); do echo $i; done", ["echo $i"]),
        ("f() { rm -rf /; }", ["rm -rf /"]),
        ("f () ( ls )", ["ls"]),
        ("function g { ls; }", ["ls"]),
        ("function h() { ls; }", ["ls"]),
        ("{ ls; } > /dev/null", ["ls"]),
    ],
)
def test_control_structures(line: str, commands: list[str]) -> None:
    hazards = parse(line).hazards
    assert CONTROL in hazards
    assert texts(parse(line)) == commands
    assert all(h in (CONTROL, SUB) for h in hazards), hazards


def test_reserved_words_only_count_unquoted_in_command_position() -> None:
    check("echo if then fi", ["echo if then fi"], ())
    check("'if' x", ["if x"], ())


# --- comments, empty input -----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("ls # rm -rf /", ["ls"]),
        ("# rm -rf /", []),
        ("ls #x\nid", ["ls", "id"]),
        ("ls; #x && y\n#z\nid", ["ls", "id"]),
        ("echo '# not a comment'", ["echo # not a comment"]),
    ],
)
def test_comments(line: str, commands: list[str]) -> None:
    check(line, commands, ())


@pytest.mark.parametrize("line", ["", " ", "\t\n \n", ";", "\\\n"])
def test_empty_input(line: str) -> None:
    check(line, [], ())


# --- unparsable input ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands", "hazard"),
    [
        ("ls; echo 'abc", ["ls", "echo abc"], "unparsable: unterminated quote"),
        ('rm -rf / "abc', ["rm -rf / abc"], "unparsable: unterminated quote"),
        ("echo $'abc", ["echo abc"], "unparsable: unterminated quote"),
        (
            "rm x; echo $(ls",
            ["rm x", "ls", "echo $(ls"],
            "unparsable: unterminated command substitution",
        ),
        ("echo `ls", ["ls", "echo `ls"], "unparsable: unterminated backquote"),
        ("echo ${x", ["echo ${x"], "unparsable: unterminated ${"),
        ("ls )", ["ls"], "unparsable: unbalanced parenthesis"),
        ("(ls; rm -rf /", ["ls", "rm -rf /"], "unparsable: unbalanced parenthesis"),
        ("rm x; <(ls", ["rm x", "ls", "<(ls"], "unparsable: unbalanced parenthesis"),
        ("echo (x)", ["echo", "x"], "unparsable: unexpected parenthesis"),
        ("ls \\", ["ls \\"], "unparsable: trailing backslash"),
        ("ls >", ["ls"], "unparsable: redirection without a target"),
        ("ls > ; rm x", ["ls", "rm x"], "unparsable: redirection without a target"),
    ],
)
def test_unparsable_input_keeps_commands_found(line: str, commands: list[str], hazard: str) -> None:
    parsed = parse(line)
    assert hazard in parsed.hazards
    assert texts(parsed) == commands


@pytest.mark.parametrize(
    "line",
    [
        "$(" * 500,
        "echo " + "$(" * 30 + "ls" + ")" * 30,
        "(" * 500,
        "${" * 500,
        "$((" * 500,
        "<(" * 500,
        '"$(' * 500,
        "eval " * 50 + "ls",
        "watch " * 50 + "ls",
    ],
)
def test_deep_nesting_is_bounded(line: str) -> None:
    parsed = parse(line)
    assert "unparsable: nesting too deep" in parsed.hazards
    assert not parsed.safe


def test_moderate_nesting_is_followed() -> None:
    assert "rm -rf /" in texts(parse("echo " + "$(" * 15 + "rm -rf /" + ")" * 15))
    line = "rm -rf /"
    for _ in range(4):
        line = "bash -c " + shlex.quote(line)
    assert "rm -rf /" in texts(parse(line))


# --- properties ----------------------------------------------------------------------

SHELL_CHARS = st.sampled_from(list(" \t\n;&|()<>$`'\"\\{}[]#=*?!~-0123456789abcEOF"))
SPECIAL_NAMES = (  # reserved words, wrappers, shells: not "plain" command names
    "if then elif else fi for while until do done case esac select function in coproc "
    "time sudo doas env nohup nice ionice timeout command builtin exec xargs stdbuf strace "
    "watch sh bash zsh dash ksh ash mksh fish csh tcsh eval source . trap "
    "export declare typeset local readonly"
)
RESERVED_OR_SPECIAL = frozenset(SPECIAL_NAMES.split())
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789/._-", min_size=1, max_size=8)
PLAIN_COMMAND = st.lists(WORD, min_size=1, max_size=4).filter(
    lambda words: words[0].split("/")[-1] not in RESERVED_OR_SPECIAL
)
SEPARATOR = st.sampled_from([" && ", " || ", "; ", " | ", "\n", "&&", ";", "|"])


@given(st.text())
def test_parse_never_raises(line: str) -> None:
    parsed = parse(line)
    assert "unparsable: internal parser error" not in parsed.hazards


@given(st.text(SHELL_CHARS, max_size=60))
def test_parse_never_raises_on_shell_syntax(line: str) -> None:
    parsed = parse(line)
    assert "unparsable: internal parser error" not in parsed.hazards
    assert len(parsed.hazards) == len(set(parsed.hazards))


@given(st.lists(PLAIN_COMMAND, min_size=1, max_size=5), st.data())
def test_plain_commands_come_back_in_order(commands: list[list[str]], data: st.DataObject) -> None:
    line = " ".join(commands[0])
    for words in commands[1:]:
        line += data.draw(SEPARATOR) + " ".join(words)
    parsed = parse(line)
    assert parsed.hazards == ()
    assert [list(c.words) for c in parsed.commands] == commands


DANGER = st.sampled_from(
    [
        "rm -rf /",
        "echo $(rm -rf /)",
        "echo `rm -rf /`",
        'echo "$(rm -rf /)"',
        "bash -c 'rm -rf /'",
        "sudo rm -rf /",
        "(rm -rf /)",
        "{ rm -rf /; }",
        "if true; then rm -rf /; fi",
        "X=$(rm -rf /) ls",
        "eval 'rm -rf /'",
    ]
)


@given(st.lists(PLAIN_COMMAND, min_size=0, max_size=4), DANGER, st.data())
def test_a_hidden_rm_is_always_seen(
    commands: list[list[str]], danger: str, data: st.DataObject
) -> None:
    parts = [" ".join(words) for words in commands]
    parts.insert(data.draw(st.integers(0, len(parts))), danger)
    line = parts[0]
    for part in parts[1:]:
        line += data.draw(SEPARATOR) + part
    assert "rm -rf /" in texts(parse(line))


@given(
    WORD.filter(lambda w: w.split("/")[-1] not in RESERVED_OR_SPECIAL),
    st.lists(st.text(max_size=10)),
)
def test_quoted_words_round_trip(name: str, args: list[str]) -> None:
    words = (name, *args)
    parsed = parse(shlex.join(words))
    assert parsed.commands == (SimpleCommand(words),)
    assert parsed.safe
