"""tapgate.decisions: what a tap or an answer means, the same on every channel.

A channel verifies and parses its platform's payload into a
:class:`~tapgate.decisions.tap_records.Tap` (or a typed answer) and calls in
here: who tapped, may they (the request's approvers, checked inside the
compare-and-set), what it decides (``taps``, ``batch_taps``, ``quorum``,
``remember``, ``edits``), the refusal and the words every tapper is told
(``refusals``, ``texts``), reasons and answers awaited as the approver's next
text (``typed_reasons``, ``questions``), chat commands (``chat_commands``,
``chat_grants``), web sign-in links (``sign_in``) and the webhook inbox that
records an event before the platform is acknowledged (``webhook_inbox``).

Imports no web framework, no chat SDK and no channel (a test enforces it).
"""

__all__: list[str] = []
