"""How config mistakes read: YAML paths, and pydantic's errors as one ``ConfigError``.

Owns the notation every config message (and the agent API's 400s) uses for a
location, ``policy.rules[3].tool``, and the translation of a pydantic
``ValidationError`` into one :class:`~tapgate.errors.ConfigError` on that path,
with a short message and a "did you mean" for a misspelt key. Kept apart from
the models so that a change to the wording touches one file, and so the
HTTP API can name a body's offending field in the same notation.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tapgate.errors import ConfigError, ConfigErrors

__all__ = ["Loc", "config_error", "format_path"]

Loc = Sequence[str | int]
"""A YAML location as pydantic reports it: keys and list indices."""


_PLAIN_KEY = re.compile(r"[^\s.\[\]\"']+")


def format_path(loc: Loc) -> str:
    """``("policy", "rules", 3, "tool")`` → ``policy.rules[3].tool``.

    Keys that would read ambiguously (dots, brackets, spaces) are quoted:
    ``policy.tools["mcp.github.*"]``.
    """
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        elif _PLAIN_KEY.fullmatch(item):
            out += f".{item}" if out else item
        else:
            out += f"[{json.dumps(item)}]"
    return out


_MESSAGES = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
}


def config_error(exc: ValidationError, root: type[BaseModel], prefix: Loc = ()) -> ConfigError:
    """Pydantic's errors as ConfigErrors on their YAML paths: all of them, so one run shows all.

    A :class:`~tapgate.errors.ConfigErrors` when there are several, whose
    ``path`` and ``message`` are the first's. ``prefix`` is where ``root`` sits
    in the file, for a section validated on its own (a channel's
    ``channels.<name>``, whose model the registry supplies).
    """
    errors = exc.errors(include_url=False, include_input=False)
    found = [_one(error, root, prefix) for error in errors]
    return found[0] if len(found) == 1 else ConfigErrors(found)


def _one(error: ErrorDetails, root: type[BaseModel], prefix: Loc = ()) -> ConfigError:
    loc = tuple(error["loc"])
    message = _describe(error, loc, root)
    loc = (*prefix, *loc)
    if loc and loc[-1] == "[key]":
        loc = loc[:-1]
        message = f"invalid key: {message}"
    elif error["type"] == "missing":
        loc = loc[:-1]
    return ConfigError(format_path(loc), message)


def _describe(error: ErrorDetails, loc: tuple[str | int, ...], root: type[BaseModel]) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "literal_error":
        return "expected one of " + ", ".join(re.findall(r"'([^']*)'", str(ctx["expected"])))
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    if kind == "extra_forbidden":
        return _unknown_key(loc, root)
    bound = {"greater_than_equal": ("at least", "ge"), "less_than_equal": ("at most", "le")}
    if kind in bound:
        words, name = bound[kind]
        return f"must be {words} {ctx[name]}"
    return _MESSAGES.get(kind, error["msg"])


def _unknown_key(loc: tuple[str | int, ...], root: type[BaseModel]) -> str:
    key = str(loc[-1])
    allowed = _fields_at(loc[:-1], root)
    close = difflib.get_close_matches(key, allowed, n=1)
    if close:
        return f"unknown key {key!r} (did you mean {close[0]!r}?)"
    if allowed:
        return f"unknown key {key!r} (expected one of {', '.join(allowed)})"
    return f"unknown key {key!r}"


def _fields_at(loc: Loc, root: type[BaseModel]) -> list[str]:
    """The keys the model at ``loc`` accepts, found by walking the annotations."""
    annotation: Any = root
    for item in loc:
        annotation = _unwrap_optional(annotation)
        if _is_model(annotation):
            field = annotation.model_fields.get(item) if isinstance(item, str) else None
            if field is None:
                return []
            annotation = field.annotation
        elif get_origin(annotation) in (tuple, list) and isinstance(item, int):
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        else:
            return []
    annotation = _unwrap_optional(annotation)
    return list(annotation.model_fields) if _is_model(annotation) else []


def _unwrap_optional(annotation: Any) -> Any:
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    return args[0] if len(args) == 1 and type(None) in get_args(annotation) else annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
