"""Making untrusted text safe to show: secrets masked, invisible characters revealed.

Owns the decision of what counts as a secret in tool arguments (decision
0008-untrusted-text): values under keys that *name* a secret, and strings that *look*
like a credential wherever they appear (a shell command, a file being written,
a URL). Also owns :func:`reveal_invisible`, because a secret is not the only
thing text can hide from an approver. Renderers never see unmasked text.

Masking errs towards hiding: a false positive costs an approver a glance at the
agent's logs, a false negative pushes a live credential into a chat history
that many people and integrations can read. With one exception: a value that
expands or runs something (``$(…)``, backticks, ``$VAR``, ``<(…)``) is shown,
since it is not a literal secret and masking it would hide the code that runs.

Every pattern is anchored at a token boundary (a look-behind) and uses
possessive quantifiers, so each starting point is tried once and no pattern can
backtrack into a run it already consumed: masking stays linear in the input
size even for hostile 100 KB arguments.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from tapgate.policy.code_references import is_reference, split_string_prefix
from tapgate.policy.secret_shapes import HIDDEN, RUNS, TOKEN_PATTERNS, mask_cli_passwords

__all__ = [
    "MASK",
    "clean",
    "clean_name",
    "is_secret_key",
    "mask_arguments",
    "mask_text",
    "reveal_invisible",
]

MASK = HIDDEN
"""What a secret becomes. Fixed width, so not even its length leaks."""

_KEYWORDS = (
    # ``pass`` only at a name's end (``DB_PASS``, ``SSHPASS``, ``--pass``), not ``passes``.
    r"passw(?:or)?d|passphrase|passcode|pass(?![a-z])|pwd|secret|token|api[_-]?key"
    r"|authorization|auth(?!or)"
    r"|credential|private[_-]?key|session[_-]?(?:key|id)|cookie|access[_-]?key|signature"
)
_SECRET_KEY = re.compile(_KEYWORDS, re.IGNORECASE)
# Names that contain a keyword but count things or name people: masking them
# would hide what an approver needs to see (``max_tokens``, ``author``).
_BENIGN_KEY = re.compile(
    r"(?:max|min|num|total|prompt|completion|input|output|reasoning)tokens?"
    r"|tokens?(?:count|limit|budget|used|usage|type)s?|tokenizer|authors?(?:name|email|id)?"
    r"|[a-z0-9]*(?:by|com|ask)pass"  # BYPASS, COMPASS, SSH_ASKPASS (a program, not a password)
)

# RSA / EC / OPENSSH / ENCRYPTED private keys, and PGP's "PRIVATE KEY BLOCK".
_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?)-----")

_VALUE = (
    # A string may carry a prefix (Python's ``f"…"``, ``b'…'``): a quoted value all the same.
    r"(?P<value>(?:[rRbBfFuU]{1,2}(?=[\"']))?+(?:\"(?:[^\"\\\n]|\\.)*+\"|'[^'\n]*+')"
    r"|(?:(?i:bearer|basic|token|digest)\s++)?[^\s'\",;&]++)"
)
# ``--password X`` / ``--api-token=X``: the flag must name a secret; a value
# that starts with "-" is the next flag, not a value (``--no-password -h db``).
_FLAG = re.compile(
    rf"(?<![\w\-])(?P<name>--?(?=[\w\-]*?(?:{_KEYWORDS}))[A-Za-z][\w\-]*+)"
    rf"(?P<sep>\s*+=\s*+|\s++(?!-)){_VALUE}",
    re.IGNORECASE,
)
# ``PASSWORD=x cmd``, ``?token=x&``, ``password: x``, ``"api_key": "x"``.
_ASSIGNMENT = re.compile(
    # Never right after "/": in ``https://oauth2:…@host`` the URL pattern owns the password.
    rf"(?P<name>(?<![\w.\-/])(?=[\w.\-]*?(?:{_KEYWORDS}))[A-Za-z_][\w.\-]*+"
    rf"|\"(?=[\w.\-]{{0,64}}?(?:{_KEYWORDS}))[\w.\-]{{1,64}}\""
    rf"|'(?=[\w.\-]{{0,64}}?(?:{_KEYWORDS}))[\w.\-]{{1,64}}')"
    # ``key: v``, ``key = v`` (TOML, INI) or ``KEY=v``; never ``KEY= v``: in a
    # shell that is an empty assignment, and ``v`` is the command that runs.
    # Go's ``:=`` and Ruby's or PHP's ``=>`` come first: read as ``:`` or ``=``, the
    # value would be the ``=`` or ``>`` and the literal after it would be shown.
    rf"(?P<sep>\s*+(?::=|=>)\s*+|\s*+:\s*+|\s++=\s*+|=){_VALUE}",
    re.IGNORECASE,
)
_AUTH_SCHEME = re.compile(r"(?i)(bearer|basic|token|digest)(\s++)")
# Bidi overrides and invisible characters let a command read differently from
# what runs ("Trojan Source"); C0/C1 controls can hide text; Unicode tag
# characters (U+E0000-U+E007F) draw as nothing yet spell ASCII to a language
# model ("ASCII smuggling"), so a card would show less than the agent sent.
# All become visible.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000e0000-\U000e007f]"
)


def is_secret_key(key: object) -> bool:
    """True when a mapping key or a flag names a secret (``X-Api-Token``, ``--password``).

    Keys are compared case-insensitively after dropping everything but letters
    and digits, so ``api_key``, ``apiKey`` and ``API-KEY`` are one name.
    """
    normalised = re.sub(r"[^a-z0-9]", "", str(key).lower())
    return bool(_SECRET_KEY.search(normalised)) and not _BENIGN_KEY.fullmatch(normalised)


def mask_arguments(arguments: Mapping[str, Any]) -> Any:
    """A deep copy of ``arguments`` that is safe to show to approvers.

    Values under secret-named keys become :data:`MASK` whatever their type
    (except ``None`` and booleans, which carry no secret); every other string,
    keys included, goes through :func:`mask_text`. Mappings become dicts,
    sequences become lists, anything else becomes its masked ``str``, so the
    result is always JSON-serialisable.
    """
    return _mask_value(arguments)


def _mask_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, Mapping):
        masked: dict[str, Any] = {}
        for key, item in value.items():
            secret = is_secret_key(key) and item is not None and not isinstance(item, bool)
            masked[_mask_key(str(key))] = MASK if secret else _mask_value(item)
        return masked
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        if len(items) > 1 and all(isinstance(i, str) and "\t" not in i for i in items):
            return _mask_argv(items)
        return [_mask_value(item) for item in items]
    return mask_text(str(value))


def _mask_argv(items: list[str]) -> list[str]:
    """A list of strings masked as the command line it may spell.

    ``["mysql", "--password", "hunter2"]`` is an argv: masked one item at a
    time, ``--password`` never sees its value. Joined with tabs (whitespace to
    every pattern, in no item) the list is masked as one text and split back.
    A secret whose value spans items (a quote opened in one, closed in a
    later one) takes them with it: fewer items, erring towards hiding.
    """
    return mask_text("\t".join(items)).split("\t")


def mask_text(text: str) -> str:
    """``text`` with every credential-looking substring replaced.

    Covers PEM private keys, the vendor token shapes of
    :data:`~tapgate.policy.secret_shapes.TOKEN_PATTERNS` (AWS, GitHub, GitLab,
    npm, Slack tokens and webhook URLs, OpenAI, Anthropic, Google, Stripe,
    SendGrid, Hugging Face, PyPI, Vault...), JWTs, ``Bearer`` /
    ``Authorization`` headers, URL passwords, per-tool password options
    (``mysql -pX``, ``sshpass -p X``, ``redis-cli -a X``...), ``--password X``
    flags and ``TOKEN=x`` / ``DB_PASS=x`` / ``password: x`` assignments.
    Linear-time; safe on untrusted input of any size.
    """
    text = _mask_pem(text)
    for pattern, replacement in TOKEN_PATTERNS:
        text = pattern.sub(replacement, text)
    text = mask_cli_passwords(text)
    text = _FLAG.sub(_mask_named_value, text)
    return _ASSIGNMENT.sub(_mask_named_value, text)


def _mask_pem(text: str) -> str:
    """Replace private-key bodies; an unterminated block is masked to the end.

    A find-based scan instead of one ``BEGIN.*?END`` pattern: the lazy pattern
    rescans the rest of the text for every ``BEGIN`` that has no ``END``.
    """
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    position = 0
    for match in _PEM_BEGIN.finditer(text):
        if match.start() < position:
            continue
        end_marker = f"-----END {match.group(1)}-----"
        end = text.find(end_marker, match.end())
        out.append(text[position : match.end()])
        out.append(f"\n{MASK}\n")
        if end < 0:
            return "".join(out)
        out.append(end_marker)
        position = end + len(end_marker)
    out.append(text[position:])
    return "".join(out)


def _mask_named_value(match: re.Match[str]) -> str:
    name, sep, value = match.group("name"), match.group("sep"), match.group("value")
    if (
        not is_secret_key(name.strip("\"'-"))
        or RUNS.search(value)
        or is_reference(value, is_secret_key)
    ):
        return match.group(0)
    return f"{name}{sep}{_mask_value_text(value)}"


def _mask_value_text(value: str) -> str:
    prefix, body = split_string_prefix(value)
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        return f"{prefix}{body[0]}{MASK}{body[0]}"
    scheme = _AUTH_SCHEME.match(value)
    if scheme is not None and scheme.end() < len(value):
        return f"{scheme.group(0)}{MASK}"
    return MASK


def clean(text: str) -> str:
    """Masked and made visible: the treatment every displayed agent string gets."""
    return reveal_invisible(mask_text(text))


_NAME_LENGTH = 256
"""Longer strings are cleaned afresh each time: names are short, hostile text need not be."""


def clean_name(text: str) -> str:
    """:func:`clean` for a short string that repeats from call to call (agent, tool, rule, reason).

    Why: a batch's card shows 20 calls of one agent, tool, rule and reason;
    cleaning each again was four of every call's seven passes over the secret
    patterns, the largest part of drawing a 20-call card (docs/benchmarks.md).
    ``clean`` is a pure function of its text, so the result of a recent one
    (a few hundred kept) is the result.
    """
    return _clean_cached(text) if len(text) <= _NAME_LENGTH else clean(text)


@functools.lru_cache(maxsize=512)
def _clean_cached(text: str) -> str:
    return clean(text)


def _mask_key(key: str) -> str:
    """:func:`mask_text` of an argument's name: the same few names come with every call."""
    return _mask_key_cached(key) if len(key) <= _NAME_LENGTH else mask_text(key)


@functools.lru_cache(maxsize=512)
def _mask_key_cached(key: str) -> str:
    return mask_text(key)


def reveal_invisible(text: str) -> str:
    """Replace control, bidi and zero-width characters with a visible ``⟨U+202E⟩``.

    An approver must see the bytes the tool will get: a right-to-left override
    can make ``rm -rf ~`` read as something harmless.
    """
    text = text.replace("\r\n", "\n")
    return _INVISIBLE.sub(lambda m: f"⟨U+{ord(m.group(0)):04X}⟩", text)
