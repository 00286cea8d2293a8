// The exec policy's approvals through a real agent turn (real store, simulator over HTTP, real
// shell): a command held back in a turn no one can answer for is denied at once and the model
// reads why; with a channel it waits on a durable record and runs only once approved; a denial,
// an expiry and a stop each keep it from running; "session" and "always" approvals are kept.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { listApprovals } from "../src/agent/approvals/approval-records.js";
import type { AgentEvent } from "../src/agent/turn.js";
import { loadConfig } from "../src/config/load.js";
import { cleanups, setupAgent } from "./helpers/agent.js";
import { waitUntil } from "./helpers/tool-context.js";

const CHANNEL = { requestedBy: "the test's channel" };

/** An agent whose exec policy is `ask` (the default), with `exec` over it. */
async function askingAgent(exec: Record<string, unknown> = {}) {
  return setupAgent({ tools: { exec: { mode: "ask", ...exec } } });
}

function terminalCall(command: string) {
  return { type: "tool_calls" as const, calls: [{ name: "terminal", arguments: { command } }] };
}

/** The tool results the model was sent in its last request. */
function toolResults(sim: Awaited<ReturnType<typeof setupAgent>>["sim"]): string[] {
  const last = sim.requests().at(-1)?.body as { messages?: Array<{ role: string; content: string }> };
  return (last.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content);
}

describe("approvals for commands the exec policy holds back", () => {
  it("with no one to answer, the command is denied at once, recorded, and the model reads how to allow it", async () => {
    const { sim, agent, session, project, store } = await askingAgent();
    const marker = join(project, "made");
    sim.script([terminalCall(`touch ${marker}`), { type: "reply", text: "ok" }]);
    const started = Date.now();
    const result = await agent.turn({ sessionId: session, text: "make it", cwd: project });
    expect(result.status).toBe("completed");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(existsSync(marker)).toBe(false);
    const [said] = toolResults(sim);
    expect(said).toContain("not run");
    expect(said).toContain("denied at once");
    expect(said).toContain("tools.exec.allow");
    const [record] = await listApprovals(store, session);
    expect(record).toMatchObject({
      status: "denied",
      command: `touch ${marker}`,
      decided_by: "no approval channel (denied at once)",
    });
  });

  it("read-only commands run without asking", async () => {
    const { sim, agent, session, project, store } = await askingAgent();
    sim.script([terminalCall("echo hello-there"), { type: "reply", text: "ok" }]);
    await agent.turn({ sessionId: session, text: "say it", cwd: project });
    expect(toolResults(sim)[0]).toContain("hello-there");
    expect(await listApprovals(store, session)).toEqual([]);
  });

  it("with a channel, it waits on a pending record and runs once approved", async () => {
    const { sim, agent, session, project, store } = await askingAgent();
    const marker = join(project, "made");
    sim.script([terminalCall(`touch ${marker}`), { type: "reply", text: "ok" }]);
    const events: AgentEvent[] = [];
    const turn = agent.turn({
      sessionId: session,
      text: "make it",
      cwd: project,
      approvals: CHANNEL,
      onEvent: (e) => events.push(e),
    });
    await waitUntil(
      () => events.some((e) => e.type === "approval_requested"),
      10_000,
      "the approval request",
    );
    const asked = events.find((e) => e.type === "approval_requested");
    if (asked?.type !== "approval_requested") throw new Error("no approval_requested event");
    // Committed before anyone was told, and nothing ran meanwhile.
    expect((await listApprovals(store, session))[0]).toMatchObject({
      approval_id: asked.approval_id,
      status: "pending",
      requested_by: CHANNEL.requestedBy,
    });
    expect(existsSync(marker)).toBe(false);
    expect((await agent.approvals.pending()).map((r) => r.approval_id)).toEqual([asked.approval_id]);
    await agent.approvals.decide(asked.approval_id, "approve", "the test");
    const result = await turn;
    expect(result.status).toBe("completed");
    expect(existsSync(marker)).toBe(true);
    expect((await listApprovals(store, session))[0]).toMatchObject({
      status: "approved",
      decision: "approve",
      decided_by: "the test",
    });
    expect(events.some((e) => e.type === "approval_decided" && e.status === "approved")).toBe(true);
    // A second decision is refused: it is not pending any more.
    await expect(agent.approvals.decide(asked.approval_id, "deny", "late")).rejects.toMatchObject({
      code: "already_decided",
    });
  });

  it("a denial, an expiry and a stop each keep the command from running", async () => {
    const { sim, agent, session, project, store } = await askingAgent({ approval_timeout: 1 });
    const marker = join(project, "made");
    const run = async (decide: (id: string) => Promise<unknown> | undefined, stop?: AbortController) => {
      sim.script([terminalCall(`touch ${marker}`), { type: "reply", text: "ok" }]);
      let asked: string | null = null;
      const turn = agent.turn({
        sessionId: session,
        text: "make it",
        cwd: project,
        approvals: CHANNEL,
        ...(stop ? { signal: stop.signal } : {}),
        onEvent: (e) => {
          if (e.type === "approval_requested") asked = e.approval_id;
        },
      });
      await waitUntil(() => asked !== null, 10_000, "the approval request");
      await decide(asked ?? "");
      return turn;
    };
    await run((id) => agent.approvals.decide(id, "deny", "the test"));
    expect(toolResults(sim).at(-1)).toContain("denied by the test");
    const expired = await run(() => undefined);
    expect(expired.status).toBe("completed");
    expect(toolResults(sim).at(-1)).toContain("expired");
    const stop = new AbortController();
    const stopped = await run(async () => stop.abort(new Error("stopped by the test")), stop);
    expect(stopped.status).toBe("interrupted");
    expect(existsSync(marker)).toBe(false);
    expect((await listApprovals(store, session)).map((r) => r.status)).toEqual([
      "denied",
      "expired",
      "cancelled",
    ]);
  });

  it("'session' lets the pattern run for the rest of the session; 'always' writes it to tools.exec.allow", async () => {
    const { sim, agent, session, project, paths, store } = await askingAgent();
    const askedIds: string[] = [];
    const turn = (command: string, sessionId = session) => {
      sim.script([terminalCall(command), { type: "reply", text: "ok" }]);
      return agent.turn({
        sessionId,
        text: "go",
        cwd: project,
        approvals: CHANNEL,
        onEvent: (e) => {
          if (e.type === "approval_requested") askedIds.push(e.approval_id);
        },
      });
    };
    const first = turn("touch a");
    await waitUntil(() => askedIds.length === 1, 10_000, "the first approval request");
    const pattern = (await agent.approvals.get(askedIds[0] ?? ""))?.pattern ?? "";
    await agent.approvals.decide(askedIds[0] ?? "", "session", "the test");
    await first;
    // The same command again in this session: no new request.
    await turn("touch a");
    expect(askedIds).toHaveLength(1);
    expect(existsSync(join(project, "a"))).toBe(true);
    // In another session it is asked again; "always" there keeps it for every session.
    const other = await agent.newSession();
    const third = turn("touch a", other);
    await waitUntil(() => askedIds.length === 2, 10_000, "the second approval request");
    await agent.approvals.decide(askedIds[1] ?? "", "always", "the test");
    await third;
    const config = readFileSync(paths.config, "utf8");
    expect(loadConfig(paths).config.tools.exec.allow).toContain(pattern);
    expect(config).toContain(pattern);
    // A new agent of the profile (a restart) reads it from config.yaml: it runs without asking.
    const reread = { ...agent.options.config, tools: loadConfig(paths).config.tools };
    const again = await Agent.create({ paths, config: reread, store });
    cleanups.push(() => again.close());
    const fresh = await again.newSession();
    const before = sim.requests().length;
    sim.script([terminalCall("touch a"), { type: "reply", text: "ok" }]);
    await again.turn({ sessionId: fresh, text: "go", cwd: project });
    expect(sim.requests()).toHaveLength(before + 2);
    expect(toolResults(sim).at(-1)).toContain('"exit_code":0');
    expect(await listApprovals(store, fresh)).toEqual([]);
  });

  it("a pending record no turn waits on is committed as expired past its time; old decisions are pruned", async () => {
    const { agent, session, store } = await askingAgent({ approval_timeout: 1 });
    const record = await agent.approvals.open({
      sessionId: session,
      turnId: "t_gone",
      toolCallId: "call_gone",
      tool: "terminal",
      command: "touch x",
      reason: "unlisted",
      dangers: [],
      pattern: "touch *",
      requestedBy: "a turn that never came back",
    });
    expect(await agent.approvals.expireDue()).toBe(0);
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await agent.approvals.pending()).toEqual([]);
    expect(await agent.approvals.expireDue()).toBe(1);
    expect(await agent.approvals.get(record.approval_id)).toMatchObject({ status: "expired" });
    expect(await agent.approvals.prune(60_000)).toBe(0);
    await new Promise((r) => setTimeout(r, 10));
    expect(await agent.approvals.prune(5)).toBe(1);
    expect(await listApprovals(store, session)).toEqual([]);
  });
});
