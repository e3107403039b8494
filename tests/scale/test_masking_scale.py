"""Masking stays linear in the size of hostile text: each pattern timed at ~100 KB and ~400 KB.

These are scale tests, not unit tests: each case masks half a megabyte of
crafted text six times (tests/scale/linearity.py says why the sizes are what
they are), about 0.7 s of CPU a case, 27 s for all of them. The folder is
``slow`` (tests/suites.py), so the inner loop leaves them to the full suite;
what the masking does to each shape is unit-tested beside the rules
(tests/policy, tests/delivery/test_render.py).
"""

from __future__ import annotations

import pytest

from tapgate.policy.masking import mask_text
from tests.scale.linearity import assert_linear

# The shapes every secret pattern starts with, repeated: a backtracking
# pattern would go quadratic on one of them.
MASKED_SHAPES = [
    "eyJ" * 34_000,
    "a" * 100_000,
    "token" * 20_000,
    "x://u:" * 17_000,
    "--password " * 9_000,
    '"password":' * 9_000,
    "password=" * 11_000,
    "-u a:" * 20_000,
    "-" * 100_000,
    "Bearer " * 14_000,
    "-----BEGIN " + "A" * 100_000,
    "-----BEGIN " + "A " * 50_000,
    "-----BEGIN PRIVATE KEY-----" * 3_700,
    "'" * 100_000,
    "sk-" * 33_000,
    "AKIA" * 25_000,
    " " * 100_000,
]


@pytest.mark.parametrize("text", MASKED_SHAPES, ids=lambda t: repr(t[:12]))
def test_masking_is_linear_on_hostile_input(text: str) -> None:
    assert_linear(mask_text, text)  # 4x the text: ~4x the time when linear, 16x if not


# Shapes of the later patterns: database clients, tokens with a vendor prefix, env names.
NEWER_SHAPES = [
    "mysql " * 17_000,
    "mysql -p" * 12_500,
    "mysql -p'" * 11_000,
    "mysql" + " -p x" * 20_000,
    'mysql -p"' + '\\"' * 45_000,
    "docker login " * 8_000,
    "sshpass -p " * 9_000,
    "/a" * 50_000,
    "glpat-" * 16_000,
    "hooks.slack.com/services/" * 4_000,
    "SG." * 33_000,
    "-U a%" * 20_000,
    "-passin pass:" * 7_000,
    "DB_PASS=" * 12_000,
    "pass" * 25_000,
]


@pytest.mark.parametrize("text", NEWER_SHAPES, ids=lambda t: repr(t[:12]))
def test_new_shapes_stay_linear_on_hostile_input(text: str) -> None:
    assert_linear(mask_text, text)  # 4x the text: ~4x the time when linear, 16x if not


# Code that refers to a secret rather than holding one (kept visible, never masked).
CODE_REFERENCES = [
    "password=os." * 8_000,
    "token = a" + ".b" * 50_000,
    "api_key=f(" * 10_000,
    "password := " * 8_000,
    "password => " * 8_000,
    'password = f"{' * 7_000,
    "token: {{" * 11_000,
]


@pytest.mark.parametrize("text", CODE_REFERENCES, ids=lambda t: repr(t[:12]))
def test_telling_references_apart_stays_linear(text: str) -> None:
    assert_linear(mask_text, text)  # 4x the text: ~4x the time when linear, 16x if not
