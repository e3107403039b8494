"""The shapes a credential takes in agent text: vendor token formats and CLI password options.

:mod:`tapgate.policy.masking` owns the decision and the order of masking; this
module owns the catalogue it draws on, so that adding a vendor's format is a
one-line change that cannot disturb the masking logic. Two kinds of shape:

- :data:`TOKEN_PATTERNS`: strings that are secrets wherever they appear,
  because a vendor gave them a recognisable prefix (``glpat-``, ``npm_``,
  ``SG.``…) or a place (``hooks.slack.com/services/…``, ``user:pass@``);
- :func:`mask_cli_passwords`: options that carry a password only for *some*
  tools (``-p`` is mysql's password but psql's and ssh's port), so they are
  read in the scope of the command that takes them.

Same rules as the masking module: every pattern is anchored at a token
boundary (a look-behind; for the prefixes that end in ``_``, an underscore
before them is a boundary too, since ``ID_ghp_…`` still carries the whole
token) and uses possessive quantifiers, so masking stays
linear in the input size; a value that expands or runs something (``$VAR``,
``$(…)``, backticks) is left visible, because it is code, not a literal secret.
"""

from __future__ import annotations

import re

__all__ = ["CLI_PASSWORD_TOOLS", "HIDDEN", "RUNS", "TOKEN_PATTERNS", "mask_cli_passwords"]

HIDDEN = "********"
"""What a secret becomes (the masking module's ``MASK``): fixed width, so no length leaks."""

RUNS = re.compile(r"[$`]|[<>]\(")
"""A value that expands or runs something: shown, since hiding it would hide code."""

_B64URL = r"A-Za-z0-9_\-"

# (pattern, replacement): each keeps a short recognisable prefix, never the body.
TOKEN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9])(AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"), r"\1****"),
    (re.compile(r"(?<![A-Za-z0-9])(gh[pousr]_|github_pat_)[A-Za-z0-9_]{10,}+"), r"\1****"),
    # GitLab personal, deploy, runner, trigger, OAuth... tokens; new ones carry ".01." parts.
    (
        re.compile(
            r"(?<![A-Za-z0-9_\-])(gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|agent|oas|ffct|wt)-)"
            r"[A-Za-z0-9_\-.]{16,}+"
        ),
        r"\1****",
    ),
    (re.compile(r"(?<![A-Za-z0-9_\-])GR1348941[A-Za-z0-9_\-]{16,}+"), "GR1348941****"),
    (re.compile(r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{30,}+"), "npm_****"),
    (
        re.compile(r"(?<![A-Za-z0-9\-.])(xox[a-z]-|xoxe\.xox[a-z]-|xapp-)[A-Za-z0-9\-]{6,}+"),
        r"\1****",
    ),
    # An incoming webhook's path *is* its credential: anyone holding it can post.
    (
        re.compile(
            r"(?<![A-Za-z0-9.\-])(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/\-]++"
        ),
        r"\1****",
    ),
    (
        re.compile(r"(?<![A-Za-z0-9.\-])(discord(?:app)?\.com/api/webhooks/)[A-Za-z0-9_/\-]++"),
        r"\1****",
    ),
    (re.compile(rf"(?<![{_B64URL}])(sk-ant-|sk-proj-|sk-)[{_B64URL}]{{16,}}+"), r"\1****"),
    (re.compile(rf"(?<![{_B64URL}])AIza[{_B64URL}]{{30,}}+"), "AIza****"),
    (re.compile(rf"(?<![{_B64URL}])GOCSPX-[{_B64URL}]{{20,}}+"), "GOCSPX-****"),
    (
        re.compile(r"(?<![A-Za-z0-9])((?:sk|rk|pk)_(?:live|test)_|whsec_)[A-Za-z0-9]{8,}+"),
        r"\1****",
    ),
    (re.compile(rf"(?<![{_B64URL}.])SG\.[{_B64URL}]{{16,}}+\.[{_B64URL}]{{16,}}+"), "SG.****"),
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}+"), "hf_****"),
    (re.compile(rf"(?<![{_B64URL}])pypi-AgE[{_B64URL}]{{50,}}+"), "pypi-****"),
    (re.compile(rf"(?<![{_B64URL}.])(hv[sbr]\.)[{_B64URL}]{{24,}}+"), r"\1****"),
    (re.compile(r"(?<![A-Za-z0-9])(do[por]_v1_)[a-f0-9]{32,}+"), r"\1****"),
    (
        re.compile(rf"(?<![{_B64URL}])eyJ[{_B64URL}]*+\.eyJ[{_B64URL}]*+\.[{_B64URL}]*+"),
        "eyJ****",
    ),
    # scheme://user:password@host: the user stays, the password goes.
    (
        re.compile(
            r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*+://[^\s:/@'\"]*+:)[^\s/@'\"]++@"
        ),
        rf"\1{HIDDEN}@",
    ),
    # Not ``Bearer {token}`` / ``${TOKEN}`` / ``#{t}``: a template's field, code, not a token.
    (re.compile(r"(?i)(?<![A-Za-z0-9_\-])(bearer\s++)(?![{$`#])[^\s'\"]++"), rf"\1{HIDDEN}"),
    # curl -u / -U / --user / --proxy-user user:password; never a URL (``-u redis://…``).
    (
        re.compile(
            r"(?<![\w\-])((?:-[uU]|--user|--proxy-user)(?:\s++|=)['\"]?[^\s:'\"]++:)(?!//)[^\s'\"]++"
        ),
        rf"\1{HIDDEN}",
    ),
    # Samba (smbclient, rpcclient, net): -U user%password.
    (
        re.compile(r"(?<![\w\-])((?:-U|--user(?:name)?)(?:\s++|=)['\"]?[^\s%'\"]++%)[^\s'\"]++"),
        rf"\1{HIDDEN}",
    ),
    # openssl -passin pass:secret (env:VAR and file:path name where it is, and stay).
    (
        re.compile(r"(?<![\w\-])(-pass(?:in|out)?\s++['\"]?pass:)[^\s'\"]++"),
        rf"\1{HIDDEN}",
    ),
)

_QUOTED_OR_WORD = r"(?P<value>'[^'\n]*+'|\"(?:[^\"\\\n]|\\.)*+\"|[^\s'\"]++)"


def _attached(flag: str) -> re.Pattern[str]:
    """``-pSECRET`` only: for tools where ``-p SECRET`` means "prompt" and a positional."""
    return re.compile(rf"(?<=[\s'\"])(?P<flag>{flag})(?P<sep>){_QUOTED_OR_WORD}")


def _either(flag: str) -> re.Pattern[str]:
    """``-p SECRET`` or ``-pSECRET``; a next word starting with ``-`` is the next option."""
    return re.compile(rf"(?<=[\s'\"])(?P<flag>{flag})(?P<sep>\s++(?!-)|){_QUOTED_OR_WORD}")


def _tools(names: str, option: re.Pattern[str] | None) -> dict[str, re.Pattern[str] | None]:
    """``option`` for each of the comma-separated tool names in ``names``."""
    return dict.fromkeys((name.strip() for name in names.split(",")), option)


# Which short option carries a password, decided per tool, because the same
# letter means a port, a stats switch or a published port elsewhere. ``None``
# names a tool whose -p is *not* a password: it still ends the scope of a
# wrapper before it (``sshpass -p X ssh -p 22``: the 22 is ssh's port).
CLI_PASSWORD_TOOLS: dict[str, re.Pattern[str] | None] = {
    # PostgreSQL clients: -p is the port, -W prompts; a password comes from
    # PGPASSWORD or a URL, which the assignment and URL patterns mask.
    **_tools("psql, pg_dump, pg_dumpall, pg_restore, pgbench, createdb, dropdb", None),
    # ssh, scp, sftp, rsync: -p / -P is a port (rsync: permissions); no password on the line.
    **_tools("ssh, scp, sftp, rsync", None),
    # mysql and MariaDB clients: -pSECRET is the password; "-p SECRET" prompts and
    # SECRET is the database name, so only the attached form is masked; -P is the port.
    **_tools(
        "mysql, mysqldump, mysqladmin, mysqlimport, mysqlshow, mysqlcheck, mysqlpump, mysqlsh, "
        "mysqlslap, mariadb, mariadb-dump, mariadb-admin, mariadb-import, mariadb-show, "
        "mariadb-check, mariadb-slap",
        _attached("-p"),
    ),
    # sshpass -p is the password (-P is the prompt to look for, -e reads $SSHPASS).
    **_tools("sshpass", _either("-p")),
    # redis-cli -a is the password (-p is the port; --pass is caught by its name).
    **_tools("redis-cli", _either("-a")),
    # MongoDB tools: -p / --password (a bare -p prompts; the next option is not a value).
    **_tools(
        "mongo, mongosh, mongodump, mongorestore, mongoexport, mongoimport, mongostat, "
        "mongotop, mongofiles",
        _either("-p"),
    ),
    # OpenLDAP clients: -w is the bind password (-W prompts).
    **_tools(
        "ldapsearch, ldapmodify, ldapadd, ldapdelete, ldapwhoami, ldapmodrdn, ldappasswd, "
        "ldapcompare",
        _either("-w"),
    ),
    # SQL Server: -P is the password; lowercase -p prints performance statistics.
    **_tools("sqlcmd, bcp", _either("-P")),
    # Registry and cloud logins: -p is the password ("docker run -p" publishes a port,
    # hence the subcommand is part of the name).
    **_tools(
        "docker login, podman login, nerdctl login, buildah login, helm registry login, az login",
        _either("-p"),
    ),
    # zip / unzip -P is the archive password; 7-Zip takes it attached (-pSECRET).
    **_tools("zip, unzip", _either("-P")),
    **_tools("7z, 7za, 7zr, 7zz", _attached("-p")),
}

_TOOL_NAMES = "|".join(
    re.escape(name).replace(r"\ ", r"\s++")
    for name in sorted(CLI_PASSWORD_TOOLS, key=len, reverse=True)
)
# The command word, optionally with a directory (``/usr/bin/mysql``), never inside a path
# (``/etc/mysql/my.cnf``) or a longer name (``mysql.service``, ``mysql_config``).
_TOOL = re.compile(rf"(?<![\w.\-/])(?:[\w.\-]*+/)*+(?P<tool>{_TOOL_NAMES})(?![\w.\-/])")
# Where a command ends: the options that follow belong to another command.
_COMMAND_END = re.compile(r"[;&|\n()`]")
_SPACES = re.compile(r"\s++")


def mask_cli_passwords(text: str) -> str:
    """``text`` with the password options of the tools in :data:`CLI_PASSWORD_TOOLS` masked.

    Each tool's options are read from its name to the end of its command (the
    next ``;``, ``&``, ``|``, newline or the next known tool), so scopes never
    overlap and every character is scanned a bounded number of times.
    """
    matches = list(_TOOL.finditer(text))
    if not matches:
        return text
    out: list[str] = [text[: matches[0].end()]]
    for index, match in enumerate(matches):
        limit = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        end_match = _COMMAND_END.search(text, match.end(), limit)
        end = end_match.start() if end_match is not None else limit
        option = CLI_PASSWORD_TOOLS[_SPACES.sub(" ", match.group("tool"))]
        scope = text[match.end() : end]
        # One password per command: a later -p belongs to a command it wraps.
        out.append(scope if option is None else option.sub(_hide_option_value, scope, count=1))
        following = matches[index + 1].end() if index + 1 < len(matches) else len(text)
        out.append(text[end:following])
    return "".join(out)


def _hide_option_value(match: re.Match[str]) -> str:
    value = match.group("value")
    if RUNS.search(value):
        return match.group(0)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = f"{value[0]}{HIDDEN}{value[0]}"
    else:
        value = HIDDEN
    return f"{match.group('flag')}{match.group('sep')}{value}"
