"""``${VAR}`` substitution: environment values in the config's strings, in one pass.

``${VAR}`` and ``${VAR:-default}`` are replaced in every string value of the
loaded YAML, before validation, so secrets stay out of the file; ``$${`` is a
literal ``${``. Text that comes out of the environment is never expanded
again. A budget of values guards against YAML alias bombs, since aliases the
loader shares are copied here.

Every unset variable is collected before anything is reported, so a config
that needs six variables names all the missing ones in one run instead of
one per run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tapgate.config.errors import Loc, format_path
from tapgate.errors import ConfigError

__all__ = ["MAX_VALUES", "interpolate"]

# `$${` first so that the escape wins over a reference starting at its second `$`;
# a bare `${` with no closing brace is caught by the last alternative.
_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_VARIABLE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


MAX_VALUES = 100_000
"""Values a configuration may hold once YAML aliases are expanded (a real one has hundreds)."""


def interpolate(data: object, env: Mapping[str, str]) -> object:
    """``data`` with ``${VAR}`` / ``${VAR:-default}`` replaced from ``env`` in every string.

    Raises one :class:`ConfigError` naming every variable that is not set,
    on the path of the first one that needs it.
    """
    missing: list[tuple[str, str]] = []
    out = _interpolate(data, _Env(env, missing), (), [MAX_VALUES])
    if missing:
        raise _missing_error(missing)
    return out


class _Env:
    """The environment, and the (variable, path) pairs it could not supply."""

    def __init__(self, values: Mapping[str, str], missing: list[tuple[str, str]]) -> None:
        self.values = values
        self.missing = missing


def _missing_error(missing: list[tuple[str, str]]) -> ConfigError:
    """One error for every unset variable: its name and where the file uses it."""
    where: dict[str, list[str]] = {}
    for name, path in missing:
        where.setdefault(name, []).append(path)
    if len(where) == 1 and len(missing) == 1:
        return ConfigError(missing[0][1], f"environment variable {missing[0][0]} is not set")
    listed = ", ".join(f"{name} ({', '.join(paths)})" for name, paths in where.items())
    count = f"{len(where)} environment variables are" if len(where) > 1 else "environment variable"
    verb = "" if len(where) > 1 else " is"
    return ConfigError(missing[0][1], f"{count}{verb} not set: {listed}")


def _interpolate(value: object, env: _Env, loc: tuple[str | int, ...], budget: list[int]) -> object:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string value; ``$${`` is a literal ``${``.

    One pass only: text that comes out of the environment is never expanded
    again, so a secret that happens to contain ``${`` stays as it is.
    ``budget`` counts values down: YAML aliases are shared by the loader but
    copied here, and a few hundred bytes of nested aliases ("billion laughs")
    would otherwise expand to billions of values and exhaust memory.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError(format_path(loc), f"more than {MAX_VALUES:,} values (nested aliases?)")
    if isinstance(value, str):
        return _substitute(value, env, loc)
    if isinstance(value, Mapping):
        return {
            key: _interpolate(item, env, (*loc, str(key)), budget) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_interpolate(item, env, (*loc, index), budget) for index, item in enumerate(value)]
    return value


def _substitute(text: str, env: _Env, loc: Loc) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group("body")
        if body is None:
            raise ConfigError(format_path(loc), "unterminated ${ (write $${ for a literal ${)")
        variable = _VARIABLE.fullmatch(body)
        if variable is None:
            raise ConfigError(format_path(loc), f"invalid environment reference ${{{body}}}")
        name, default = variable.group("name"), variable.group("default")
        if default is not None and "${" in default:
            raise ConfigError(format_path(loc), "nested ${...} references are not supported")
        found = env.values.get(name)
        if default is not None and not found:  # like the shell: unset or empty
            return default
        if found is None:
            env.missing.append((name, format_path(loc)))
            return ""  # reported with the others once the whole file has been read
        return found

    return _REFERENCE.sub(replace, text)
