"""Hypothesis strategies the request-fuzzing tests share: any JSON document, any header value.

Small on purpose (a dozen leaves, short strings): the tests that draw them
post each example through the real app, so the size of a document buys
nothing past the shapes it can take.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["HEADER_VALUES", "JSON"]

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
"""Any JSON value: a body, a field, a nested part of one."""

HEADER_VALUES = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=64
)
"""What an HTTP client can put in a header value (Latin-1, no controls)."""
