"""Telling a secret's *value* from code that only *refers* to one, for masking.

``API_KEY = os.environ["API_KEY"]`` names a secret and assigns it, yet holds
none: the value is a lookup. Masking it (``API_KEY = ********"API_KEY"]``)
shows the approver code the agent never sent, which is worse than useless on a
card whose purpose is to judge that code. :func:`is_reference` is the test
:mod:`tapgate.policy.masking` applies to a value after a secret-named key; what
it accepts is shown as written, everything else is still masked.

What counts as a reference, chosen so that a literal credential almost never
passes (masking errs towards hiding; see the masking module):

- a call or a subscript on a name: ``getenv("TOKEN")``, ``os.environ[…]``,
  ``ENV['X']``, ``ENV.fetch(…)``, ``os.Getenv(…)``, ``std::env::var(…)``;
- a dotted name whose last part names a secret (``config.password``,
  ``settings.SECRET_KEY``, ``process.env.API_KEY``) or that goes through an
  environment (``process.env.DB``, ``import.meta.env.X``);
- a template: ``{{ vault_password }}`` (Ansible, Helm, Jinja), a Ruby
  ``"#{token}"`` or a Python f-string with a ``{…}`` field.

A bare identifier (``password = hunter2``) is *not* one: YAML, INI and shell
write literal values that way, so it stays masked. ``$VAR``, ``${VAR}`` and
``$(…)`` are the masking module's own concern (they run or expand).

Every pattern is possessive and applied to one already-matched value, so the
cost stays linear in the input.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["is_reference", "split_string_prefix"]

_NAME = r"[A-Za-z_]\w*+"
_PATH = rf"{_NAME}(?:(?:\.|::){_NAME})*+"
_CALL_OR_SUBSCRIPT = re.compile(rf"{_PATH}[(\[].*+", re.DOTALL)
_DOTTED = re.compile(rf"(?P<path>{_NAME}(?:(?:\.|::){_NAME})++)[)\]}}]*+")
_SEPARATOR = re.compile(r"\.|::")
_ENVIRONMENTS = frozenset({"env", "environ", "environment"})
_PREFIX = re.compile(r"[rRbBfFuU]{1,2}(?=[\"'])")


def split_string_prefix(value: str) -> tuple[str, str]:
    """``f"x"`` → ``("f", '"x"')``; a value without a string prefix → ``("", value)``."""
    match = _PREFIX.match(value)
    if match is None:
        return "", value
    return match.group(0), value[match.end() :]


def is_reference(value: str, names_secret: Callable[[str], bool]) -> bool:
    """True when ``value`` (as written after a secret's name) is code that refers to a secret.

    ``names_secret`` is the masking module's test of a name, passed in so
    both agree on what names a secret without importing each other.
    """
    prefix, body = split_string_prefix(value)
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        return _is_template(prefix, body[1:-1])
    if body.startswith("{{"):  # Helm / Jinja unquoted: ``password: {{ .Values.pw }}``
        return True
    if _CALL_OR_SUBSCRIPT.fullmatch(body):
        return True
    dotted = _DOTTED.fullmatch(body)
    if dotted is None:
        return False
    *parents, last = _SEPARATOR.split(dotted.group("path"))
    return names_secret(last) or any(p.lower() in _ENVIRONMENTS for p in parents)


def _is_template(prefix: str, text: str) -> bool:
    """A quoted value that is filled in from elsewhere: ``"{{ x }}"``, ``"#{x}"``, ``f"{x}"``."""
    if "{{" in text and "}}" in text:
        return True
    if "#{" in text and "}" in text:
        return True
    return "f" in prefix.lower() and "{" in text and "}" in text
