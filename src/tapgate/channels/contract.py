"""What a platform implements to be a tapgate channel: the :class:`Channel` protocol.

A channel is one folder under ``tapgate/channels/`` (or a package of its own)
registered under the ``tapgate.channels`` entry-point group; the server and the
config find it there by name and never import it directly. It owns everything
about its platform:

- **its config**: ``settings_model`` validates ``channels.<name>``;
  ``address_field`` validates an approver's ``approvers[].<name>`` id, and
  ``approver_fields`` any extra per-approver keys it needs (Slack's
  ``slack_team``);
- **delivery**: :meth:`Channel.notifier` builds the
  :class:`~tapgate.delivery.notifier.Notifier` the outbox dispatcher drives
  (rendering from the shared presentation model, the platform's retries, rate
  limits and idempotency live behind it);
- **inbound**: :meth:`Channel.routes` names the HTTP routes it serves;
  :meth:`Channel.start` returns the :class:`Receiver` that verifies each request
  on its raw bytes, records it in the webhook inbox before acknowledging, turns
  it into the domain's tap records, answers the tapper and runs its chat
  commands, all through :mod:`tapgate.decisions` (what a tap means is the
  domain's, the same for every channel);
- **a live setup check**: :meth:`Channel.check` asks the platform whether the
  credentials work and each approver is reachable (``tapgate doctor``).

The host hands a channel the narrow collaborators it uses (:class:`ChannelHost`),
never the whole app. The domain imports no channel; no channel imports another.
See docs/channels.md ("Writing a channel") and the decision record
``0018-channels-are-plugins``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from aiohttp import web

    from tapgate.decisions.chat_commands import LinkMaker
    from tapgate.decisions.remember import Offer
    from tapgate.decisions.review_links import ReviewLinks
    from tapgate.decisions.webhook_inbox import Inbox
    from tapgate.delivery.notifier import Notifier
    from tapgate.gate.gate import Gate
    from tapgate.gate.models import Request

__all__ = [
    "AddressField",
    "Channel",
    "ChannelDefaults",
    "ChannelHost",
    "CheckResult",
    "ConversationBook",
    "DeliveryHost",
    "Handler",
    "Receiver",
    "Route",
]

Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]
"""An aiohttp handler: a channel's route adapter, a few lines around its receiver."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AddressField:
    """How an approver's id on this channel is written in ``approvers[].<channel>``.

    ``parse`` returns the id as taps will carry it, or raises ``ValueError``
    whose message tells the operator where to find the right id (a wrong id
    is accepted by most platforms' send APIs only to fail later, and never
    matches a tap: the approver would be silently unreachable).
    """

    parse: Callable[[str], str]
    team_field: str | None = None
    """The per-approver key naming the workspace an id belongs to, where ids are
    unique only within one (Slack's ``slack_team``); ``None`` where ids are global."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    """One HTTP route a channel serves; ``name`` keys its handler in the :class:`Receiver`."""

    method: Literal["GET", "POST", "HEAD"]
    path: str
    name: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckResult:
    """One line of ``tapgate doctor``: what was checked, and whether it passed."""

    channel: str
    what: str
    ok: bool
    detail: str = ""
    approver: str | None = None
    """The approver whose reachability this line checked (``None``: the credentials, or
    anything else); ``tapgate doctor`` counts an approver reachable on a channel whose
    line naming them passed."""


class ConversationBook(Protocol):
    """Conversations a receiver learned it may post in, per channel and approver address.

    For platforms where a bot cannot open a chat from a user id (Teams: the
    user installs the app first); the store's ``conversations`` is one.
    """

    async def get(self, channel: str, address: str) -> dict[str, str] | None:
        """The stored reference for ``address`` on ``channel``, or ``None``."""
        ...

    async def put(
        self, channel: str, address: str, reference: Mapping[str, str], now: datetime
    ) -> None:
        """Store ``reference`` for ``address`` on ``channel``."""
        ...

    async def addresses(self, channel: str) -> frozenset[str]:
        """Every address ``channel`` has a reference for."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryHost:
    """What a channel's notifier may use of the host: nothing that can decide."""

    tool_shell_args: Mapping[str, str] = field(default_factory=dict)
    """The argument of each shell tool that holds its command (rendered as code)."""
    offers: Callable[[Request], Offer] | None = None
    """The remember buttons ("Allow for session", "Always") a card offers, per request."""
    inbox_button: bool = False
    """Whether cards carry "Open inbox" (the web inbox has a public URL)."""
    config_path: str | None = None
    """The config file the server runs with (the console's copy-paste commands name it)."""
    public_url: str | None = None
    """``server.public_url``: where links in messages point, when set."""
    review_links: Callable[[str], ReviewLinks] | None = None
    """Makes the single-use review links a message may carry, for the named channel
    (a channel that answers on a web page, as email does); ``None`` without a store."""
    conversations: ConversationBook | None = None
    """Conversation references a receiver learned (Teams: where each approver installed
    the app): a notifier that cannot open a chat from a user id reads them here."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChannelHost:
    """The collaborators a channel's receiver is handed by the server.

    ``gate`` is the one door to decisions (a receiver calls
    :mod:`tapgate.decisions` with it); ``inbox`` records a verified event
    before the platform is acknowledged and replays it after a crash;
    ``links`` makes single-use web-inbox sign-in links (``None`` without
    ``server.public_url``); ``on_reject`` counts a refused request by reason,
    ``on_decision`` observes a decided tap's latency; ``tap_log`` is the
    logging level of a decided tap's one line (``None``: off).
    """

    gate: Gate
    inbox: Inbox
    links: LinkMaker | None
    on_reject: Callable[[str], None]
    on_decision: Callable[[float], None]
    tap_log: int | None
    public_url: str | None = None
    conversations: ConversationBook | None = None
    """Where the channel stores the conversations it learns (see :class:`DeliveryHost`)."""


@runtime_checkable
class Receiver(Protocol):
    """A channel's inbound side, started with the server and closed on shutdown."""

    def handler(self, route: str) -> Handler:
        """The handler for the :class:`Route` called ``route``."""
        ...

    async def close(self) -> None:
        """Stop listening (sockets, long polls) and release clients."""
        ...


@runtime_checkable
class Channel(Protocol):
    """A platform tapgate can ask approvers on. One instance per installed channel."""

    name: str
    """The key in ``channels:`` and in ``approvers[]``; also the entry point's name."""
    settings_model: type[BaseModel]
    """Validates ``channels.<name>``: secrets, base URLs, timeouts, modes."""
    address: AddressField | None
    """An approver's id here (``approvers[].<name>``); ``None`` when the channel
    reaches every approver by name (the console)."""
    approver_fields: Mapping[str, Any]
    """Extra per-approver keys this channel reads, each to its pydantic type."""
    on_without_others: bool
    """Enabled when no other channel is configured and its section is absent
    (the console, so a first run shows requests somewhere)."""

    def enabled(self, settings: BaseModel) -> bool:
        """Whether a present section turns the channel on (``enabled: false`` turns it off)."""
        ...

    def validate(self, settings: BaseModel, *, public_url: str | None) -> None:
        """Checks across config sections (``server.public_url``), once the whole file is read.

        Raises :class:`~tapgate.errors.ConfigError` naming the YAML path; a
        channel with nothing to check across sections does nothing.
        """
        ...

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        """The notifier that delivers this channel's cards (its SDK loads here, not at import)."""
        ...

    def pace(self, settings: BaseModel) -> float | None:
        """Seconds between two messages to one conversation, or ``None`` for no pacing."""
        ...

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        """The HTTP routes the server adds for this channel (none in a polling mode)."""
        ...

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        """Start the inbound side: register with ``host.inbox``, open sockets or polls."""
        ...

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        """Ask the platform whether the credentials work and each approver is reachable.

        ``addresses`` maps an approver's name to their id on this channel;
        ``conversations`` is the store's conversation book when ``tapgate doctor``
        could open the database (``None`` otherwise): a channel that can reach an
        approver only where they messaged it first (Teams) reads it, others ignore it.
        """
        ...


class ChannelDefaults:
    """The contract's usual answers, for a channel class to inherit and override.

    Most channels have no extra per-approver keys, are off without their
    section, are on when it is present, check nothing across sections, do not
    pace and serve no route; a channel states only where it differs.
    """

    approver_fields: Mapping[str, Any] = {}
    on_without_others = False

    def enabled(self, settings: BaseModel) -> bool:
        """A present section turns the channel on."""
        del settings
        return True

    def validate(self, settings: BaseModel, *, public_url: str | None) -> None:
        """Nothing to check across config sections."""
        del settings, public_url

    def pace(self, settings: BaseModel) -> float | None:
        """No pacing between messages to one conversation."""
        del settings
        return None

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        """No HTTP routes (a channel that only sends, or connects out)."""
        del settings
        return ()
