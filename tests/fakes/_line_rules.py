"""Request-body checks of the fake LINE Messaging API.

The real API rejects a bad body with 400 and a list of ``details``; a notifier
that builds a buttons template with 61 characters of text next to a title
fails in production, so the fake enforces the limits that approval messages
run into (message count, text lengths, template actions, postback data, and
the actions inside a Flex message: label, data, ``displayText``,
``inputOption`` and ``fillInText``, as LINE's Messaging API reference states them).
A text message's ``text`` and an ``altText`` are measured in UTF-16 code
units, as LINE counts them ("Character counting in a text": 🍎 is two).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Detail = dict[str, str]

MESSAGE_TYPES = frozenset(
    {
        "text",
        "textV2",
        "sticker",
        "image",
        "video",
        "audio",
        "location",
        "imagemap",
        "template",
        "flex",
    }
)
_TEXT_MAX = 5000
_ALT_TEXT_MAX = 1500
_BUTTONS_TEXT_MAX = 160
_BUTTONS_TEXT_MAX_WITH_TITLE_OR_IMAGE = 60
_CONFIRM_TEXT_MAX = 240
_LABEL_MAX = 20
_POSTBACK_DATA_MAX = 300
_DISPLAY_TEXT_MAX = 300
_FILL_IN_TEXT_MAX = 300
_INPUT_OPTIONS = frozenset({"closeRichMenu", "openRichMenu", "openKeyboard", "openVoice"})


def check_messages(messages: Any) -> list[Detail]:
    """Problems with the ``messages`` array (empty when it is acceptable)."""
    if messages is None:
        return [_detail("must be specified", "messages")]
    if not isinstance(messages, list):
        return [_detail("must be an array", "messages")]
    if not 1 <= len(messages) <= 5:
        return [_detail("Size must be between 1 and 5", "messages")]
    details: list[Detail] = []
    for index, message in enumerate(messages):
        details.extend(_check_message(message, f"messages[{index}]"))
    return details


def _check_message(message: Any, where: str) -> list[Detail]:
    if not isinstance(message, dict):
        return [_detail("must be an object", where)]
    kind = message.get("type")
    if kind not in MESSAGE_TYPES:
        return [_detail("Invalid message type", f"{where}.type")]
    if kind == "text":
        return _check_text(message.get("text"), _TEXT_MAX, f"{where}.text", units=_utf16)
    if kind in {"template", "flex"}:
        alt = message.get("altText")
        details = _check_text(alt, _ALT_TEXT_MAX, f"{where}.altText", units=_utf16)
        if kind == "flex":
            contents = message.get("contents")
            if not isinstance(contents, dict):
                details.append(_detail("must be specified", f"{where}.contents"))
                return details
            return details + _check_flex_actions(contents, f"{where}.contents")
        return details + _check_template(message.get("template"), f"{where}.template")
    return []


def _check_template(template: Any, where: str) -> list[Detail]:
    if not isinstance(template, dict):
        return [_detail("must be specified", where)]
    kind = template.get("type")
    actions = template.get("actions")
    if kind == "buttons":
        has_header = bool(template.get("title") or template.get("thumbnailImageUrl"))
        limit = _BUTTONS_TEXT_MAX_WITH_TITLE_OR_IMAGE if has_header else _BUTTONS_TEXT_MAX
        details = _check_text(template.get("text"), limit, f"{where}.text")
        return details + _check_actions(actions, 1, 4, f"{where}.actions")
    if kind == "confirm":
        details = _check_text(template.get("text"), _CONFIRM_TEXT_MAX, f"{where}.text")
        return details + _check_actions(actions, 2, 2, f"{where}.actions")
    if kind in {"carousel", "image_carousel"}:
        return []
    return [_detail("Invalid template type", f"{where}.type")]


def _check_actions(actions: Any, low: int, high: int, where: str) -> list[Detail]:
    if not isinstance(actions, list) or not low <= len(actions) <= high:
        return [_detail(f"Size must be between {low} and {high}", where)]
    details: list[Detail] = []
    for index, action in enumerate(actions):
        at = f"{where}[{index}]"
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            details.append(_detail("must be specified", f"{at}.type"))
            continue
        label = action.get("label")
        if isinstance(label, str) and len(label) > _LABEL_MAX:
            details.append(_detail(f"Length must be between 0 and {_LABEL_MAX}", f"{at}.label"))
        if action["type"] == "postback":
            details.extend(_check_text(action.get("data"), _POSTBACK_DATA_MAX, f"{at}.data"))
    return details


def _check_flex_actions(node: Any, where: str) -> list[Detail]:
    """Every ``action`` object anywhere in a Flex container (buttons, boxes, texts)."""
    details: list[Detail] = []
    if isinstance(node, dict):
        for key, value in node.items():
            at = f"{where}.{key}"
            if key == "action" and isinstance(value, dict):
                details.extend(_check_action(value, at))
            else:
                details.extend(_check_flex_actions(value, at))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            details.extend(_check_flex_actions(item, f"{where}[{index}]"))
    return details


def _check_action(action: dict[str, Any], where: str) -> list[Detail]:
    if not isinstance(action.get("type"), str):
        return [_detail("must be specified", f"{where}.type")]
    details: list[Detail] = []
    label = action.get("label")
    if isinstance(label, str) and len(label) > _LABEL_MAX:
        details.append(_detail(f"Length must be between 0 and {_LABEL_MAX}", f"{where}.label"))
    if action["type"] != "postback":
        return details
    details.extend(_check_text(action.get("data"), _POSTBACK_DATA_MAX, f"{where}.data"))
    if "displayText" in action and "text" in action:
        details.append(_detail("displayText and text cannot both be set", where))
    if "displayText" in action:
        shown = action["displayText"]
        details.extend(_check_text(shown, _DISPLAY_TEXT_MAX, f"{where}.displayText"))
    option = action.get("inputOption")
    if option is not None and option not in _INPUT_OPTIONS:
        details.append(_detail("Invalid input option", f"{where}.inputOption"))
    if "fillInText" in action:
        if option != "openKeyboard":
            message = "fillInText requires inputOption openKeyboard"
            details.append(_detail(message, f"{where}.fillInText"))
        fill = action["fillInText"]
        details.extend(_check_text(fill, _FILL_IN_TEXT_MAX, f"{where}.fillInText"))
    return details


def _utf16(value: str) -> int:
    """UTF-16 code units: how LINE counts a text message's text and an ``altText``."""
    return len(value.encode("utf-16-le")) // 2


def _check_text(
    value: Any, limit: int, where: str, *, units: Callable[[str], int] = len
) -> list[Detail]:
    """``units`` is LINE's measure of the property: UTF-16 code units for message
    texts, grapheme clusters for action labels and template texts (``len``,
    code points, is never fewer, so the fake is at least as strict there)."""
    if not isinstance(value, str) or not value:
        return [_detail("must be specified", where)]
    if units(value) > limit:
        return [_detail(f"Length must be between 0 and {limit}", where)]
    return []


def _detail(message: str, prop: str) -> Detail:
    return {"message": message, "property": prop}
