// The MCP layer's row: a tool server that dies in the middle of a call. The call answers the model
// with an error saying it may have run, the turn completes, the server is started again, and the
// next turn's call works. The server is a few lines of JSON-RPC over stdio written into the scratch
// home (it needs nothing installed), which exits on the first call it gets.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { McpEvent } from "../agent/mcp/mcp-types.js";
import type { Scenario } from "./runner.js";
import { scratchSession } from "./scratch.js";
import { watchedTurn } from "./watched-turn.js";

/** An MCP server with one tool, `work`, that exits on its first call and answers "worked" after. */
const SERVER = `import { existsSync, writeFileSync } from "node:fs";
const mark = process.argv[2];
const send = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (text) => {
  buffered += text;
  for (let at = buffered.indexOf("\\n"); at >= 0; at = buffered.indexOf("\\n")) {
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    if (line.trim() !== "") answer(JSON.parse(line));
  }
});
process.stdin.on("end", () => process.exit(0));
function answer(m) {
  if (m.id === undefined) return;
  const result = (value) => send({ jsonrpc: "2.0", id: m.id, result: value });
  if (m.method === "initialize")
    return result({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "drill", version: "1" } });
  if (m.method === "tools/list")
    return result({ tools: [{ name: "work", description: "Do the work.", inputSchema: { type: "object", properties: {} } }] });
  if (m.method === "ping") return result({});
  if (m.method === "tools/call") {
    if (!existsSync(mark)) {
      writeFileSync(mark, "");
      process.exit(1);
    }
    return result({ content: [{ type: "text", text: "worked" }] });
  }
  send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
}
`;

const serverDiesMidCall: Scenario = {
  fault: "MCP server dies mid-call",
  expected_layer: "mcp",
  async run(context) {
    const script = join(context.home, "drill-mcp-server.mjs");
    writeFileSync(script, SERVER);
    const server = {
      command: process.execPath,
      args: [script, join(context.home, "drill-mcp-crashed")],
      timeout: 10,
    };
    const { sim, opened, session } = await scratchSession(context, "mcp", {
      mcp: { servers: { drill: server } },
    });
    const hub = opened.agent.mcp;
    if (hub === null) return { ok: false, detail: "the agent has no MCP servers" };
    const events: McpEvent[] = [];
    context.defer(
      hub.on((event) => {
        events.push(event);
        if (event.type === "mcp_restart") context.caught(event.layer);
      }),
    );
    opened.agent.startMcp();
    const call = { type: "tool_calls" as const, calls: [{ name: "mcp__drill__work", arguments: {} }] };
    sim.script([call, { type: "reply", text: "the server died" }]);
    const first = await watchedTurn(context, opened, session, "do the work", {
      watch: false,
      onEvent: (event) => {
        if (event.type === "tool_started") context.injected();
      },
    });
    const toldFirst = await lastToolResult(opened, session);
    // The server is started again after its backoff; the next turn's call reaches it.
    while (hub.states()[0]?.status !== "ready") {
      if (context.signal.aborted) throw context.signal.reason;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    sim.script([call, { type: "reply", text: "done" }]);
    const second = await watchedTurn(context, opened, session, "again", { watch: false });
    const toldSecond = await lastToolResult(opened, session);
    const restarts = hub.states()[0]?.restarts ?? 0;
    return {
      ok:
        first.result.status === "completed" &&
        toldFirst.includes("it may have run") &&
        second.result.status === "completed" &&
        toldSecond === "worked" &&
        restarts === 1,
      detail: `first turn ${first.result.status}, the model read: ${toldFirst.slice(0, 160)}; restarts ${restarts}; second turn ${second.result.status}, the model read: ${toldSecond.slice(0, 80)}; ${events.map((e) => e.type).join(" → ")}`,
    };
  },
};

async function lastToolResult(
  opened: { store: { getMessages(id: string): Promise<Array<{ role: string; content: unknown }>> } },
  session: string,
): Promise<string> {
  const messages = await opened.store.getMessages(session);
  const last = messages.filter((m) => m.role === "tool").at(-1);
  return typeof last?.content === "string" ? last.content : "";
}

export const mcpScenarios: readonly Scenario[] = [serverDiesMidCall];
