"""Loading tapgate's YAML config: from a file on disk to a validated :class:`Config`.

This module owns the path, step by step, and where each step lives::

    YAML text ──safe load──► plain data ──${VAR}──► plain data ──pydantic──► Config
                (here)                (substitution)            (model + sections)
        Config.policy_spec() ──► core.rules.PolicySpec
        Config.directory()   ──► core.directory.Directory

Every mistake an operator can make surfaces as one :class:`~tapgate.errors.ConfigError`
whose ``path`` is the YAML path of the offending value (``policy.rules[3].tool``),
never as a pydantic traceback (:mod:`tapgate.config.errors`). A key whose
value is ``null`` means "use the default", so that a section whose entries are
all commented out still loads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import ValidationError

from tapgate.config.errors import config_error
from tapgate.config.model import Config
from tapgate.config.substitution import interpolate
from tapgate.errors import ConfigError

__all__ = ["load_config", "load_store_config", "parse_config"]


def load_config(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Config:
    """Read, interpolate and validate the YAML config file at ``path``.

    ``env`` supplies ``${VAR}`` values (default: ``os.environ``) so tests and
    tools can load a config without touching the process environment.
    """
    return parse_config(_read_yaml(os.fspath(path)), env)


def load_store_config(
    path: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    *,
    with_policy: bool = False,
    with_server: bool = False,
) -> Config:
    """The file's ``store`` section and approver names only, as a :class:`Config`.

    For the commands that work on the database (``pending``, ``resolve``,
    ``grants``, ``audit``, ``db upgrade``): they run on an operator's shell,
    where the chat secrets' and agent tokens' variables are rightly unset, so
    nothing else in the file is interpolated or checked. The rest of the
    returned config holds the defaults; it is not the server's config.
    ``with_policy`` keeps the ``policy`` section too: ``resolve --scope
    session|always`` grants what the policy lets a card offer, for as long
    (``always_ttl``, ``always_uses``), never more. ``with_server`` keeps the
    ``server`` section too: ``inbox-link`` builds its link from ``public_url``
    (or the listen address), and the section holds no secret.
    """
    part = _store_part(_read_yaml(os.fspath(path)), with_policy, with_server)
    return parse_config(part, env)


def _store_part(data: object, with_policy: bool, with_server: bool = False) -> object:
    if not isinstance(data, dict):
        return data  # refused by the model with its usual message
    part: dict[str, object] = {}
    kept = ("store",) + (("policy",) if with_policy else ()) + (("server",) if with_server else ())
    for section in kept:
        if section in data:
            part[section] = data[section]
    approvers = data.get("approvers")
    if isinstance(approvers, list):
        part["approvers"] = [
            {k: v for k, v in entry.items() if k in ("name", "groups")}
            if isinstance(entry, dict)
            else entry
            for entry in approvers
        ]
    elif approvers is not None:
        part["approvers"] = approvers
    return part


def _read_yaml(file: str) -> object:
    """The YAML document in ``file``; every failure a one-line :class:`ConfigError`."""
    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError("", f"cannot read config file {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("", f"config file {file} is not UTF-8 text: {exc.reason}") from None
    # from None: a YAML error's text quotes the offending line, which may hold a secret.
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:  # a recursive alias, or nesting hundreds deep
        raise ConfigError("", f"{file}: invalid YAML: nested too deeply") from None
    except yaml.MarkedYAMLError as exc:
        raise ConfigError("", _yaml_message(file, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError("", f"{file}: invalid YAML: {exc}") from None
    return data


def parse_config(data: object, env: Mapping[str, str] | None = None) -> Config:
    """Interpolate ``${VAR}`` in already-loaded data, then validate it into a :class:`Config`.

    An empty document (``None``) is the all-defaults config.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    try:
        resolved = interpolate({} if data is None else data, environ)
        return Config.model_validate(resolved)
    except ValidationError as exc:
        # from None: the pydantic error would repeat every input value, secrets included.
        raise config_error(exc, Config) from None
    except RecursionError:  # data built in Python can nest deeper than any config needs
        raise ConfigError("", "the configuration is nested too deeply") from None


class _StrictLoader(yaml.SafeLoader):
    """``safe_load`` that also refuses duplicate keys.

    Plain YAML keeps the last of two equal keys, so a second ``rules:`` under
    ``policy`` would silently discard the first list of rules.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # ``<<: *base``: merged keys may be overridden, explicit ones not
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool):
                continue  # a complex key (``? [a, b]``): the models refuse it with its path
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_message(file: str, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = exc.problem or exc.context or "syntax error"
    return f"{file}: invalid YAML{where}: {problem}"
