// A real ACP agent in JavaScript, on the TypeScript SDK (@agentclientprotocol/sdk), for
// tests/client/test_acp_proxy.py: the proxy must hold for an agent that is not Python.
// Each prompt turn asks permission for a shell command, then for a file write, with option
// ids of its own, and tells the client what it was answered ("execute -> ID").
import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const OPTIONS = [
  { optionId: "js-yes-once", name: "Allow", kind: "allow_once" },
  { optionId: "js-yes-always", name: "Always allow", kind: "allow_always" },
  { optionId: "js-no-once", name: "Reject", kind: "reject_once" },
  { optionId: "js-no-always", name: "Always reject", kind: "reject_always" },
];
const CALLS = [
  { toolCallId: "js-1", title: "Run make deploy", kind: "execute",
    rawInput: { command: "make deploy", cwd: "/work/app" } },
  { toolCallId: "js-2", title: "Write src/app.py", kind: "edit",
    rawInput: { path: "/work/app/src/app.py", content: "print('hi')\n" } },
];

let sessions = 0;
const app = agent()
  .onRequest("initialize", () => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: {} }))
  .onRequest("session/new", () => ({ sessionId: `js-session-${++sessions}` }))
  .onRequest("session/prompt", async ({ params, client }) => {
    for (const call of CALLS) {
      const answer = await client.request("session/request_permission", {
        sessionId: params.sessionId, toolCall: call, options: OPTIONS,
      });
      const chosen = answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled";
      await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk",
                  content: { type: "text", text: `${call.kind} -> ${chosen}` } },
      });
    }
    return { stopReason: "end_turn" };
  });

app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
