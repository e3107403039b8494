"""An approval an approver edited, answered to Codex: denied, naming the edited call.

Codex refuses a ``PermissionRequest`` hook's ``updatedInput`` and then shows
its own prompt, where the *unedited* call could be approved; the Codex hook
denies instead and names the edited call for the model to issue. The edit is
made through Slack's real Edit modal (``test_edit``'s server and fake Slack).
"""

from __future__ import annotations

import asyncio
import json

from tapgate.client._codex_hook import codex_hook
from tests.channels.slack.test_edit import TOKEN, Served, served
from tests.client.test_hook_codex import codex_input, codex_verdict

__all__ = ["served"]  # the fixture, shared with test_edit


async def test_an_edited_approval_is_denied_to_codex_naming_the_edited_call(
    served: Served,
) -> None:
    raw = json.dumps(codex_input({"command": "make deploy", "description": "Deploy"}))
    hook = asyncio.create_task(
        asyncio.to_thread(codex_hook, raw, url=served.url, token=TOKEN, timeout=30)
    )
    request = await served.pending()
    view = await served.open_edit(request)
    assert (await served.edit(view, {"command": "make deploy-staging"}))[0] == 200
    decision, message = codex_verdict(await asyncio.wait_for(hook, 10))
    assert decision == "deny"
    assert "approved with an edit, which a Codex hook cannot apply" in message
    assert '"command":"make deploy-staging"' in message
    await served.settled()
