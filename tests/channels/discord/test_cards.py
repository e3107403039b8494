"""Discord cards: within Discord's limits for any input, and hostile agent text made inert.

Every card is checked by the fake Discord's own validator (the limits the
fake refuses a message by), so a card that passes here is one Discord
accepts. The property test feeds hostile text (mentions, masked links,
fences, markdown, control and invisible characters, secrets) through every
place agent text lands.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.channels.discord.batch_cards import render_discord_batch
from tapgate.channels.discord.cards import edit_offer, render_discord, render_discord_resolved
from tapgate.channels.discord.edits import edit_modal, fits_modal
from tapgate.channels.discord.settings import DiscordConfig, parse_discord_user
from tapgate.channels.discord.signature import Verifier
from tapgate.channels.discord.text import code_block, escape
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.errors import ConfigError
from tests.factories import make_request
from tests.fakes.discord_api import APPLICATION_ID, BOT_TOKEN, Signer, _problems

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LONGEST_ID = "x" * 64
HOSTILE = st.lists(
    st.sampled_from(
        [
            *"`*_~|>#-[]()<>@:!\\/\n \u200b\u202e\U000e0041é😀",
            *("@everyone", "<@123456789012345678>", "[click](https://evil.example)", "```"),
        ]
    ),
    max_size=80,
).map("".join)


def outside_code(text: str) -> str:
    """``text`` with every fenced code block removed (what Discord formats)."""
    return re.sub(r"```\n.*?\n```", "", text, flags=re.DOTALL)


def texts(card: dict[str, Any]) -> list[str]:
    embed = card["embeds"][0]
    found = [card["content"], embed["title"], embed["description"], embed["footer"]["text"]]
    found += [f["value"] for f in embed["fields"]]
    return found


def assert_inert(card: dict[str, Any]) -> None:
    assert card["allowed_mentions"] == {"parse": []}
    assert _problems(card) == {}, _problems(card)
    for text in texts(card):
        fences = text.count("```")
        assert fences % 2 == 0  # every block we opened is closed by us, none by the agent
        shown = outside_code(text)
        assert "@everyone" not in shown and re.search(r"<@!?\d", shown) is None
        assert "](" not in shown.replace("\\](", "").replace("\\]\\(", "")
        assert "https://" not in shown


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=HOSTILE, agent=HOSTILE, argument=HOSTILE, reason=HOSTILE)
def test_hostile_text_is_escaped_and_fenced_in_every_card(
    tool: str, agent: str, argument: str, reason: str
) -> None:
    request = make_request(
        NOW,
        tool=tool or "t",
        agent=agent or "a",
        session="s1",
        arguments={"command": argument, "note": argument},
        reason=reason,
    )
    view = present(request, now=NOW)
    assert_inert(render_discord(view))
    assert_inert(render_discord(view, inbox=True, edit="modal"))
    for status in ("approved", "denied"):
        assert_inert(render_discord_resolved(view, status=status, by=agent, at=NOW, reason=reason))
    batch = [
        make_request(NOW, batch_id="b1", tool=tool or "t", arguments={"a": argument, "n": n})
        for n in range(3)
    ]
    assert_inert(render_discord_batch(present_batch(batch), inbox=True))


def test_the_edit_modal_fits_discord_and_shows_no_secret() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    arguments = {"k" * 200: "v", "token": secret, "n": 3, "blob": "x" * 3000, "e": ""}
    request = make_request(NOW, id=LONGEST_ID, arguments=arguments)
    assert fits_modal(request)
    modal = edit_modal(request)
    data = modal["data"]
    assert modal["type"] == 9 and len(data["custom_id"]) <= 100 and len(data["title"]) <= 45
    inputs = [row["components"][0] for row in data["components"]]
    assert len(inputs) == 5 and secret not in json.dumps(modal)
    assert all(len(i["label"]) <= 45 and len(i.get("value", "")) <= 4000 for i in inputs)
    assert all(i["required"] is False and i["max_length"] <= 4000 for i in inputs)
    six = make_request(NOW, arguments={f"k{n}": n for n in range(6)})
    assert not fits_modal(six)
    card = render_discord(present(six), inbox=True, edit=edit_offer(present(six), six))
    labels = [b["label"] for row in card["components"] for b in row["components"]]
    assert "Edit in inbox" in labels and "Edit…" not in labels
    assert _problems(card) == {}


def test_a_code_block_cannot_be_closed_by_its_text() -> None:
    block = code_block("a```b````c`")
    inner = block.removeprefix("```\n").removesuffix("\n```")
    assert "```" not in inner and "``" not in inner


def test_escape_breaks_mentions_links_and_markdown() -> None:
    shown = escape("@everyone [x](https://e.example) **bold** <@1>")
    assert "@everyone" not in shown and "](" not in shown and "**" not in shown
    assert "<@1" not in shown and "\\<" in shown


def test_the_longest_ids_fit_custom_id_and_every_button_is_unique() -> None:
    request = make_request(NOW, id=LONGEST_ID, session="s" * 64)
    card = render_discord(present(request))
    assert _problems(card) == {}
    batch = [make_request(NOW, id=f"{n:02d}" + "y" * 62, batch_id="z" * 64) for n in range(50)]
    big = render_discord_batch(present_batch(batch))
    assert _problems(big) == {}  # ≤ 5 rows of ≤ 5, custom_id ≤ 100, embed ≤ 6000
    assert len(big["components"]) == 5
    assert "Calls without buttons here" in big["embeds"][0]["description"]


def test_a_huge_argument_is_cut_visibly() -> None:
    request = make_request(NOW, arguments={"blob": "line\n" * 5000})
    card = render_discord(present(request))
    assert _problems(card) == {}
    assert "more line" in card["embeds"][0]["description"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("123456789012345678", True),
        (123456789012345678, True),
        ("alice#0001", False),
        ("12", False),
    ],
)
def test_approver_ids_are_snowflakes(value: object, ok: bool) -> None:
    if ok:
        assert parse_discord_user(str(value)) == str(value)
    else:
        with pytest.raises(ValueError, match="Copy User ID"):
            parse_discord_user(str(value))


def test_the_section_checks_id_key_and_token_shapes() -> None:
    good = {"application_id": int(APPLICATION_ID), "public_key": "ab" * 32, "bot_token": BOT_TOKEN}
    assert DiscordConfig.model_validate(good).application_id == APPLICATION_ID
    for key, bad in (
        ("application_id", "my-app"),
        ("public_key", "ab" * 31),
        ("bot_token", "client-secret-without-dots"),
    ):
        with pytest.raises(ValueError, match=key if key != "bot_token" else "bot token"):
            DiscordConfig.model_validate({**good, key: bad})


def test_check_config_names_the_yaml_path_of_a_bad_discord_id(tmp_path: Any) -> None:
    from tapgate.config import parse_config

    with pytest.raises(ConfigError, match=r"approvers\[0\]\.discord"):
        parse_config(
            {
                "approvers": [{"name": "alice", "discord": "alice#0001"}],
                "channels": {
                    "discord": {
                        "application_id": APPLICATION_ID,
                        "public_key": "ab" * 32,
                        "bot_token": BOT_TOKEN,
                    }
                },
                "policy": {"rules": [{"tool": "x", "action": "ask"}]},
            },
            env={},
        )


def test_signatures_are_checked_on_the_raw_bytes_and_the_clock() -> None:
    signer = Signer()
    verifier = Verifier(signer.public_key)
    body = b'{"type":1}'
    headers = signer.headers(body, timestamp=1_700_000_000)
    ts, sig = headers["X-Signature-Timestamp"], headers["X-Signature-Ed25519"]
    assert verifier.check(body, timestamp=ts, signature=sig, now=1_700_000_010) == "ok"
    assert verifier.check(body + b" ", timestamp=ts, signature=sig, now=1_700_000_010) == "mismatch"
    assert verifier.check(body, timestamp=ts, signature=sig, now=1_700_000_100) == "stale"
    other = str(int(ts) + 1)  # the timestamp is signed too
    assert verifier.check(body, timestamp=other, signature=sig, now=1_700_000_010) == "mismatch"
    for bad_ts, bad_sig in ((None, sig), (ts, None), (" 17", sig), (ts, sig[:-2]), (ts, "zz" * 64)):
        assert verifier.check(body, timestamp=bad_ts, signature=bad_sig, now=1_700_000_010) in (
            "missing",
            "mismatch",
        )
    stranger = Signer().headers(body, timestamp=1_700_000_000)["X-Signature-Ed25519"]
    assert verifier.check(body, timestamp=ts, signature=stranger, now=1_700_000_010) == "mismatch"


def test_an_approver_only_discord_reaches_is_refused_without_the_discord_channel() -> None:
    from tapgate.config import parse_config

    with pytest.raises(ConfigError, match="alice"):
        parse_config(
            {
                "approvers": [{"name": "alice", "discord": "123456789012345678"}],
                "channels": {"line": {"channel_access_token": "t", "channel_secret": "s"}},
                "policy": {"rules": [{"tool": "x", "action": "ask", "approvers": ["alice"]}]},
            },
            env={},
        )
