"""An in-process agent whose gate asks at the terminal: run on a pty by test_terminal_prompt.

``python -m tests.channels.console.prompt_agent URL TOOL ARGUMENTS_JSON`` checks one
call against a policy that asks for everything, with a
:class:`~tapgate.channels.console.prompt.TerminalPrompt` on this process's
terminal, and prints the decision as one ``DECISION {json}`` line.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tapgate.channels.console.prompt import TerminalPrompt
from tapgate.gate.gate import Gate
from tapgate.gate.models import ToolCall
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec, Rule, ToolSpec
from tapgate.store import Store

ASK_ALL = PolicySpec(
    tools=(ToolSpec(name="Bash", risk="write", shell="command"),),
    rules=(Rule(tool="*", action="ask", source="policy.rules[0]"),),
)


async def main(url: str, tool: str, arguments: str) -> None:
    store = await Store.open(url)
    try:
        async with Gate(store=store, policy=Policy(ASK_ALL), handler=TerminalPrompt()) as gate:
            call = ToolCall(tool=tool, arguments=json.loads(arguments), agent="dev", session="s1")
            decision = await gate.check(call)
    finally:
        await store.close()
    shown = {k: getattr(decision, k) for k in ("verdict", "decided_by", "reason", "request_id")}
    print("DECISION " + json.dumps(shown))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
