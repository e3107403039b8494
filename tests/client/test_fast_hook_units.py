"""The hook's fast path as functions: its flags, URLs, HTTP reading and JSON, no process.

tests/client/test_fast_hook.py runs the fast path as the real process Claude
Code and Codex start (``python -I -S _fast_hook.py``); here are the parts it
is made of, each held to what it stands in for (argparse, ``json``, the
domain's constants) on fixed and generated inputs.
"""

from __future__ import annotations

import json
import math
from typing import Any, get_args
from unittest.mock import ANY

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapgate.client import DEFAULT_HOOK_TIMEOUT
from tapgate.client import _fast_hook as fast
from tapgate.client import _hook_answer as answers
from tapgate.client._hook import HOOK_EVENTS
from tapgate.gate.models import DecisionSource, DecisionStatus, Verdict


def test_what_came_back_is_handed_over_intact() -> None:
    cases = [(b"HTTP/1.1 201 Created\r\n\r\n{}", None), (b"", ("ReadTimeout", "timed out"))]
    for received, failure in cases:
        handed = answers.encode_submitted(received, failure)
        assert answers.decode_submitted(handed) == (received, failure)
    too_large = answers.encode_submitted(b"x" * (answers._MAX_REPLAY + 1), None)
    assert answers.decode_submitted(too_large) == (b"", ("RemoteProtocolError", ANY))
    for garbage in ("", "not base64!", "Zm9v"):
        with pytest.raises(ValueError, match=r"base64|padding|handed over"):
            answers.decode_submitted(garbage)


def test_the_constants_are_the_domains() -> None:
    assert set(answers.VERDICTS) == set(get_args(Verdict))
    assert set(answers.DECISION_STATUSES) == set(get_args(DecisionStatus))
    assert set(answers.DECISION_SOURCES) == set(get_args(DecisionSource))
    assert fast.HOOK_EVENTS == HOOK_EVENTS
    assert float(fast._HOOK_TIMEOUT) == DEFAULT_HOOK_TIMEOUT


@pytest.mark.parametrize(
    "url",
    [
        "https://tapgate.example",
        "http://[::1]:8080",
        "http://host:99999",
        "http://host:port",
        "http://h\u00f6st",
        "http://host/?q=1",
        "ftp://host",
        "127.0.0.1:8080",
    ],
)
def test_what_is_not_plain_http_is_handed_off(url: str) -> None:
    with pytest.raises(fast.HandOff):
        fast._http_url(url)


def test_answers_are_read_to_their_length_or_their_end() -> None:
    body = b'{"decision": "allow"}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    sized = head + b"Content-Length: %d\r\n\r\n" % len(body) + body + b"trailing junk"
    assert fast._response(sized) == (200, {"decision": "allow"})
    assert fast._response(head + b"\r\n" + body) == (200, {"decision": "allow"})
    for broken in (
        head + b"Content-Length: 99\r\n\r\n" + body,  # cut short
        head + b"Transfer-Encoding: chunked\r\n\r\n15\r\n" + body + b"\r\n0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n" + body,
        head + b"\r\n[1]",
    ):
        with pytest.raises(fast.HandOff):
            fast._response(broken)


def test_a_proxy_in_the_environment_is_handed_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast._http_url("http://agent:pw@Host:8080/base/") == ("host", 8080, "/base")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    with pytest.raises(fast.HandOff):
        fast._http_url("http://host:8080")


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--submitted", "x"],
        ["--on-error", "maybe"],
        ["--timeout", "-5"],
        ["--timeout=nan"],
        ["--retry-for", "2d"],
        ["--url"],
        ["--token", "x"],
        ["--url", "--timeout"],
    ],
)
def test_flags_it_cannot_vouch_for_are_handed_off(argv: list[str]) -> None:
    with pytest.raises((fast.HandOff, ValueError)):
        fast.read_flags(argv)


def test_flags_are_read_as_argparse_reads_them() -> None:
    found = fast.read_flags(["--url=http://x:1", "--token-env", "T", "--on-expired", "ask"])
    assert (found["--url"], found["--token-env"], found["--on-expired"]) == (
        "http://x:1",
        "T",
        "ask",
    )
    assert answers.duration("2m") == 120 and answers.seconds("0.5") == 0.5


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_dumps_writes_what_json_writes(value: Any) -> None:
    assert fast._dumps(value, compact=False) == json.dumps(value)
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert fast._dumps(value, compact=True) == compact


@given(JSON, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_loads_reads_what_json_reads(value: Any, space: str) -> None:
    text = space + json.dumps(value, ensure_ascii=False) + space
    assert fast._loads(text) == json.loads(text)


@given(st.text(max_size=40))
def test_loads_refuses_what_json_refuses(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(fast.HandOff):
            fast._loads(text)
        return
    found = fast._loads(text)
    assert found == expected or (isinstance(found, float) and math.isnan(found))
