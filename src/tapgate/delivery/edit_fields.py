"""An edit form's fields as HTML: shared by the web inbox's Edit and the email review page.

What the fields are (masked prefills, ids, kinds) is
:func:`tapgate.decisions.edits.edit_form`; this draws one as a labelled
``<textarea>`` with what was typed and what is wrong with it, every value
escaped. Both pages post the same field ids back.
"""

from __future__ import annotations

import html

from tapgate.decisions.edits import EditField

__all__ = ["field_html"]


def field_html(field: EditField, typed: str | None, error: str | None) -> str:
    """One argument: its name, kind, the prefill (or what was typed), and what is wrong with it."""
    shown = field.text if typed is None else typed
    kind = "JSON" if field.json else "text"
    note = " · masked: left as shown, the value is kept" if field.masked else ""
    problem = f'<span class="error" id="{field.id}-error">{_e(error)}</span>' if error else ""
    invalid = f' aria-invalid="true" aria-describedby="{field.id}-error"' if error else ""
    # the newline after <textarea> is dropped by HTML parsers: a value's own first one is kept
    rows = min(12, max(1, shown.count("\n") + 1))
    return (
        f'<p class="edit-field"><label for="{field.id}"><code>{_e(field.key)}</code> '
        f"<small>({kind}{note})</small></label>"
        f'<textarea id="{field.id}" name="{field.id}" rows="{rows}"{invalid}>'
        f"\n{_e(shown)}</textarea>"
        f"{problem}</p>"
    )


def _e(text: str) -> str:
    return html.escape(text, quote=True)
