// MCP servers through a real gateway process (the built CLI) and the simulator on real HTTP, with a
// real MCP server written on the official SDK (test/fixtures/mcp-server.mjs) started by the
// gateway: a tool call's result reaches the model; a hung call ends at the server's timeout with an
// error result and the turn completes; a server that crashes is started again and its tools work;
// a server that cannot start leaves the gateway serving and is named in /health with the command to
// try; a tool the config lists under `approve` waits for its approval; and no server process
// outlives the gateway, stopped or killed.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { McpServerState } from "../src/agent/mcp/mcp-types.js";
import { pidAlive } from "../src/core/process-identity.js";
import type { Simulator } from "../src/llm/simulator/server.js";
import { requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const FIXTURE = join(import.meta.dirname, "fixtures/mcp-server.mjs");

/** A profile on the simulator with the fixture as MCP server `fx` (and any other servers given). */
async function mcpProfile(fx: Record<string, unknown> = {}, more = "") {
  const log = join(tempDir("tenax-mcp-"), "calls.log");
  const server = { command: process.execPath, args: [FIXTURE], env: { MCP_FIXTURE_LOG: log }, ...fx };
  const made = await simProfile(
    "",
    `tools: { exec: { mode: full } }\nmcp:\n  servers:\n    fx: ${JSON.stringify(server)}\n${more}`,
  );
  return { ...made, log };
}

async function mcpState(gw: GatewayProcess, server = "fx"): Promise<McpServerState | undefined> {
  const health = (await (await gw.fetch("/health")).json()) as {
    components: { mcp: { servers: McpServerState[] } };
  };
  return health.components.mcp.servers.find((s) => s.server === server);
}

async function chat(gw: GatewayProcess, text: string): Promise<{ status: number; reply: string }> {
  const response = await gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  });
  const body = (await response.json()) as { choices?: Array<{ message: { content: string } }> };
  return { status: response.status, reply: body.choices?.[0]?.message.content ?? JSON.stringify(body) };
}

/** What the model was told of each tool call, in order (the simulator's last request). */
function toolResults(sim: Simulator): string[] {
  const body = sim.requests().at(-1)?.body as { messages: Array<{ role: string; content: string }> };
  return body.messages.filter((m) => m.role === "tool").map((m) => m.content);
}

function toolNames(sim: Simulator): string[] {
  const body = sim.requests()[0]?.body as { tools?: Array<{ function: { name: string } }> };
  return (body.tools ?? []).map((t) => t.function.name);
}

describe("tenax gateway run: MCP servers", () => {
  it("a tool call's result reaches the model; a hung call ends at the timeout and the turn completes", async () => {
    const { sim, home, log, paths } = await mcpProfile({ timeout: 1 });
    const gw = await startGateway(home);
    sim.script([
      { type: "tool_calls", calls: [{ name: "mcp__fx__echo", arguments: { text: "from the model" } }] },
      { type: "tool_calls", calls: [{ name: "mcp__fx__hang", arguments: {} }] },
      { type: "reply", text: "done despite the hang" },
    ]);
    const started = Date.now();
    const answer = await chat(gw, "use the tools");
    expect(answer).toEqual({ status: 200, reply: "done despite the hang" });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(toolNames(sim)).toEqual(expect.arrayContaining(["mcp__fx__echo", "mcp__fx__hang", "terminal"]));
    const [echo, hang] = toolResults(sim);
    expect(echo).toBe("echo: from the model");
    expect(JSON.parse(hang as string).error).toBe(
      'mcp__fx__hang is unavailable: server "fx" did not answer within 1 s (mcp.servers.fx.timeout); the call was cancelled, and it may have run',
    );
    await until(() => readFileSync(log, "utf8").includes("hang cancelled"));
    // The server is still there for the next turn, and /metrics and the audit trail counted the timeout.
    expect(await mcpState(gw)).toMatchObject({ status: "ready", timeouts: 1, calls: 2 });
    const metrics = await (await gw.fetch("/metrics")).text();
    expect(metrics).toContain('tenax_mcp_timeouts_total{server="fx"} 1');
    expect(metrics).toContain('tenax_mcp_server_up{server="fx"} 1');
    const trail = readFileSync(join(paths.logs, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(trail).toContainEqual(
      expect.objectContaining({ type: "mcp_timeout", layer: "mcp", source: "gateway" }),
    );
  });

  it("a server that crashes is started again, and its tools work once it is back", async () => {
    const { sim, home, paths } = await mcpProfile();
    const gw = await startGateway(home);
    sim.script([
      { type: "tool_calls", calls: [{ name: "mcp__fx__crash", arguments: {} }] },
      { type: "reply", text: "it crashed" },
    ]);
    expect((await chat(gw, "crash it")).reply).toBe("it crashed");
    expect(JSON.parse(toolResults(sim)[0] as string).error).toMatch(
      /^mcp__fx__crash is unavailable: server "fx" was lost during the call \(.*\); it may have run; Tenax is starting the server again$/,
    );
    await until(async () => (await mcpState(gw))?.status === "ready" && (await mcpState(gw))?.restarts === 1);
    sim.script([
      { type: "tool_calls", calls: [{ name: "mcp__fx__echo", arguments: { text: "back" } }] },
      { type: "reply", text: "ok" },
    ]);
    expect((await chat(gw, "again")).reply).toBe("ok");
    expect(toolResults(sim)).toEqual(["echo: back"]);
    // The restart is in the audit trail, for `tenax events --layer mcp` the morning after.
    const trail = readFileSync(join(paths.logs, "events.jsonl"), "utf8");
    expect(trail).toMatch(/"layer":"mcp","type":"mcp_restart"/);
  });

  it("a server that cannot start leaves the gateway serving, named in /health with the command to try", async () => {
    const broken = {
      command: process.execPath,
      args: [FIXTURE],
      env: { MCP_FIXTURE_FAIL_START: "ERROR: GITHUB_TOKEN is not set" },
    };
    const { home } = await mcpProfile({}, `    broken: ${JSON.stringify(broken)}\n`);
    const gw = await startGateway(home);
    await until(
      async () =>
        (await mcpState(gw, "broken"))?.status === "failed" && (await mcpState(gw, "fx"))?.status === "ready",
    );
    const health = (await (await gw.fetch("/health")).json()) as {
      status: string;
      components: { mcp: { status: string; detail: string; next: string } };
    };
    expect(health.status).toBe("degraded");
    expect(health.components.mcp.status).toBe("degraded");
    expect(health.components.mcp.detail).toContain("broken: failed to start");
    expect(health.components.mcp.detail).toContain("ERROR: GITHUB_TOKEN is not set");
    expect(health.components.mcp.next).toContain("tenax mcp test broken");
    // The other server and the gateway serve on.
    expect((await chat(gw, "still there?")).status).toBe(200);
  });

  it("a tool listed under approve waits for its approval, then runs", async () => {
    const { sim, home, log } = await mcpProfile({ approve: ["echo"] });
    const gw = await startGateway(home);
    sim.script([
      { type: "tool_calls", calls: [{ name: "mcp__fx__echo", arguments: { text: "approved" } }] },
      { type: "reply", text: "done" },
    ]);
    const submitted = await gw.fetch("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "echo, once approved" }] }),
    });
    const { run_id } = (await submitted.json()) as { run_id: string };
    let pending: { approval_id: string; command: string } | undefined;
    await until(async () => {
      const list = (await (await gw.fetch(`/v1/runs/${run_id}/approvals`)).json()) as {
        data: Array<{ approval_id: string; command: string; status: string }>;
      };
      pending = list.data.find((a) => a.status === "pending");
      return pending !== undefined;
    });
    expect(pending?.command).toBe('mcp__fx__echo {"text":"approved"}');
    expect(existsSync(log)).toBe(false);
    const decided = await gw.fetch(`/v1/runs/${run_id}/approvals/${pending?.approval_id}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(200);
    await until(
      async () =>
        ((await (await gw.fetch(`/v1/runs/${run_id}`)).json()) as { status: string }).status === "completed",
    );
    expect(readFileSync(log, "utf8")).toBe("echo approved\n");
    expect(toolResults(sim)).toEqual(["echo: approved"]);
  });

  it("a run stopped while an MCP call hangs cancels the call on the server, and the server serves on", async () => {
    const { sim, home, log } = await mcpProfile();
    const gw = await startGateway(home);
    sim.script([
      { type: "tool_calls", calls: [{ name: "mcp__fx__hang", arguments: {} }] },
      { type: "reply", text: "never asked for" },
    ]);
    const submitted = await gw.fetch("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "hang" }] }),
    });
    const { run_id } = (await submitted.json()) as { run_id: string };
    await until(() => existsSync(log) && readFileSync(log, "utf8").includes("hang"));
    expect((await gw.fetch(`/v1/runs/${run_id}/stop`, { method: "POST" })).status).toBeLessThan(300);
    await until(async () => {
      const run = (await (await gw.fetch(`/v1/runs/${run_id}`)).json()) as { status: string };
      return run.status !== "running" && run.status !== "queued";
    });
    await until(() => readFileSync(log, "utf8").includes("hang cancelled"));
    expect(sim.requests()).toHaveLength(1);
    expect(await mcpState(gw)).toMatchObject({ status: "ready", timeouts: 0 });
  });

  it("no server process outlives the gateway: stopped, or killed and started again", async () => {
    const { sim, home } = await mcpProfile();
    const first = await startGateway(home);
    sim.script([
      { type: "tool_calls", calls: [{ name: "mcp__fx__spawn_child", arguments: {} }] },
      { type: "reply", text: "started" },
    ]);
    await chat(first, "start a child");
    const child = Number(toolResults(sim)[0]);
    const server = (await mcpState(first))?.pid as number;
    expect(pidAlive(child) && pidAlive(server)).toBe(true);
    // Killed outright: nothing ends the server then, but the next start finds it by its marks.
    first.child.kill("SIGKILL");
    await first.exited;
    expect(pidAlive(server)).toBe(true);
    const second = await startGateway(home);
    await until(() => !pidAlive(child) && !pidAlive(server));
    await until(async () => (await mcpState(second))?.status === "ready");
    const again = (await mcpState(second))?.pid as number;
    expect(again).not.toBe(server);
    // Stopped: the gateway ends its servers before it exits.
    second.child.kill("SIGTERM");
    await second.exited;
    expect(pidAlive(again)).toBe(false);
  });
});
