"""``${VAR}`` substitution: environment values in the config's strings, in one pass.

``${VAR}`` and ``${VAR:-default}`` are replaced in every string value of the
loaded YAML, before validation, so secrets stay out of the file; ``$${`` is a
literal ``${``. Text that comes out of the environment is never expanded
again. A budget of values guards against YAML alias bombs, since aliases the
loader shares are copied here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tapgate.bot.config.errors import Loc, format_path
from tapgate.errors import ConfigError

__all__ = ["MAX_VALUES", "interpolate"]

# `$${` first so that the escape wins over a reference starting at its second `$`;
# a bare `${` with no closing brace is caught by the last alternative.
_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_VARIABLE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


MAX_VALUES = 100_000
"""Values a configuration may hold once YAML aliases are expanded (a real one has hundreds)."""


def interpolate(data: object, env: Mapping[str, str]) -> object:
    """``data`` with ``${VAR}`` / ``${VAR:-default}`` replaced from ``env`` in every string."""
    return _interpolate(data, env, (), [MAX_VALUES])


def _interpolate(
    value: object, env: Mapping[str, str], loc: tuple[str | int, ...], budget: list[int]
) -> object:
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


def _substitute(text: str, env: Mapping[str, str], loc: Loc) -> str:
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
        found = env.get(name)
        if default is not None and not found:  # like the shell: unset or empty
            return default
        if found is None:
            raise ConfigError(format_path(loc), f"environment variable {name} is not set")
        return found

    return _REFERENCE.sub(replace, text)
