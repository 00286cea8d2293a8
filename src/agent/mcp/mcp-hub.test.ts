// The MCP client against real MCP servers written on the official SDK (test/fixtures/mcp-server.mjs):
// one over stdio, one over Streamable HTTP, each a real process.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext, waitUntil } from "../../../test/helpers/tool-context.js";
import type { McpServerConfig } from "../../config/mcp-schema.js";
import { defaultDeps } from "../../core/deps.js";
import { selfIdentity } from "../../core/process-identity.js";
import { Redactor } from "../../core/redact.js";
import { pidAlive } from "../process-group.js";
import { scanMarked } from "../process-marks.js";
import type { Tool } from "../tools/types.js";
import { MCP_TOOLS_KIND, McpHub, type McpToolMemory, mcpTaskId, storeToolMemory } from "./mcp-hub.js";
import type { McpEvent } from "./mcp-types.js";

const FIXTURE = join(import.meta.dirname, "../../../test/fixtures/mcp-server.mjs");
const hubs: McpHub[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

function stdioServer(env: Record<string, string> = {}, timeout = 10): McpServerConfig {
  return { command: process.execPath, args: [FIXTURE], env, timeout, approve: [] };
}

function openHub(servers: Record<string, McpServerConfig>, dir = tempDir(), memory?: McpToolMemory) {
  const events: McpEvent[] = [];
  const hub = new McpHub({
    servers,
    profileDir: dir,
    profileMark: dir,
    owner: selfIdentity(),
    secrets: { names: new Set(), redactor: new Redactor([]) },
    deps: defaultDeps,
    redact: (t) => t,
    gate: null,
    tryCommand: (server) => `tenax mcp test ${server}`,
    link: { backoff: { firstMs: 50, maxMs: 400, stableMs: 60_000 }, pingEveryMs: 100 },
    ...(memory ? { memory } : {}),
  });
  hub.on((e) => events.push(e));
  hubs.push(hub);
  hub.start();
  return { hub, events, dir };
}

const tool = (hub: McpHub, name: string): Tool => {
  const found = hub.tools().find((t) => t.spec.name === name);
  if (!found)
    throw new Error(
      `no tool ${name}; have ${hub
        .tools()
        .map((t) => t.spec.name)
        .join(", ")}`,
    );
  return found;
};
const call = (hub: McpHub, name: string, args: Record<string, unknown> = {}, signal?: AbortSignal) =>
  tool(hub, name).run(args, toolContext(tempDir(), signal ? { signal } : {}));
const state = (hub: McpHub, server: string) => hub.states().find((s) => s.server === server);

describe("MCP servers over stdio", () => {
  it("lists the server's tools under safe names and passes results on as tool results", async () => {
    const log = join(tempDir(), "calls.log");
    const { hub } = openHub({ fx: stdioServer({ MCP_FIXTURE_LOG: log }) });
    await hub.firstStart(10_000);
    expect(state(hub, "fx")?.status).toBe("ready");
    const names = hub.tools().map((t) => t.spec.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "mcp__fx__echo",
        "mcp__fx__add",
        "mcp__fx__hang",
        "mcp__fx__crash",
        "mcp__fx__picture",
      ]),
    );
    const echo = tool(hub, "mcp__fx__echo").spec;
    expect(echo.description).toContain('tool "echo" of MCP server "fx"');
    expect(echo.parameters).toMatchObject({ type: "object", properties: { text: { type: "string" } } });
    expect(echo.parameters).not.toHaveProperty("$schema");

    expect(await call(hub, "mcp__fx__echo", { text: "hi" })).toBe("echo: hi");
    expect(await call(hub, "mcp__fx__add", { a: 2, b: 3 })).toEqual({
      text: '{"sum":5}',
      structured_content: { sum: 5 },
    });
    expect(await call(hub, "mcp__fx__picture")).toMatch(/^\[image: image\/png, 300 bytes, not shown/);
    await expect(call(hub, "mcp__fx__fail")).rejects.toThrow("mcp__fx__fail failed: the disk is full");
    expect(readFileSync(log, "utf8")).toBe("echo hi\nadd 2 3\nfail\n");
    expect(state(hub, "fx")).toMatchObject({ calls: 4, errors: 1, timeouts: 0, restarts: 0 });
  });

  it("ends a hung call at the timeout, cancels it on the server, and keeps the other tools", async () => {
    const log = join(tempDir(), "calls.log");
    const { hub, events } = openHub({ fx: stdioServer({ MCP_FIXTURE_LOG: log }, 0.5) });
    await hub.firstStart(10_000);
    const started = Date.now();
    await expect(call(hub, "mcp__fx__hang")).rejects.toThrow(
      'mcp__fx__hang is unavailable: server "fx" did not answer within 0.5 s (mcp.servers.fx.timeout); the call was cancelled, and it may have run',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitUntil(
      () => readFileSync(log, "utf8").includes("hang cancelled"),
      5_000,
      "the server hears of the cancel",
    );
    expect(await call(hub, "mcp__fx__echo", { text: "still here" })).toBe("echo: still here");
    expect(state(hub, "fx")).toMatchObject({ status: "ready", timeouts: 1, restarts: 0 });
    expect(events.filter((e) => e.type === "mcp_timeout")).toEqual([
      expect.objectContaining({
        server: "fx",
        tool: "mcp__fx__hang",
        session_id: "session-1",
        turn_id: "turn-1",
      }),
    ]);
  });

  it("stops a call when the turn is interrupted, and the server hears of it", async () => {
    const log = join(tempDir(), "calls.log");
    const { hub } = openHub({ fx: stdioServer({ MCP_FIXTURE_LOG: log }) });
    await hub.firstStart(10_000);
    const interrupt = new AbortController();
    const pending = call(hub, "mcp__fx__hang", {}, interrupt.signal);
    await waitUntil(
      () => existsSync(log) && readFileSync(log, "utf8").includes("hang"),
      5_000,
      "the call to start",
    );
    interrupt.abort(new Error("interrupted by the test"));
    await expect(pending).rejects.toThrow("interrupted by the test");
    await waitUntil(
      () => readFileSync(log, "utf8").includes("hang cancelled"),
      5_000,
      "the server hears of the cancel",
    );
  });

  it("starts a server that died again, and its tools work once it is back", async () => {
    const { hub, events } = openHub({ fx: stdioServer() });
    await hub.firstStart(10_000);
    const firstPid = state(hub, "fx")?.pid;
    await expect(call(hub, "mcp__fx__crash")).rejects.toThrow(
      /mcp__fx__crash is unavailable: server "fx" was lost during the call \(.*\); it may have run; Tenax is starting the server again/,
    );
    // Down, its tools stay listed and say so at once.
    expect(hub.tools().map((t) => t.spec.name)).toContain("mcp__fx__echo");
    await waitUntil(() => state(hub, "fx")?.status === "ready", 10_000, "the server to be back");
    expect(state(hub, "fx")?.pid).not.toBe(firstPid);
    expect(await call(hub, "mcp__fx__echo", { text: "back" })).toBe("echo: back");
    expect(state(hub, "fx")).toMatchObject({ restarts: 1 });
    const restart = events.find((e) => e.type === "mcp_restart");
    expect(restart?.message).toMatch(
      /MCP server "fx" was lost: the server exited \(exit code 7\); starting it again in/,
    );
  });

  it("keeps trying a server that cannot start, and says why with the command to try", async () => {
    const { hub, events } = openHub({
      broken: stdioServer({ MCP_FIXTURE_FAIL_START: "ERROR: GITHUB_TOKEN is not set" }),
    });
    await hub.firstStart(10_000);
    await waitUntil(
      () => (state(hub, "broken")?.failures ?? 0) >= 3 && state(hub, "broken")?.next_attempt_at !== null,
      10_000,
      "three failures",
    );
    const s = state(hub, "broken");
    expect(s?.status).toBe("failed");
    expect(s?.last_error).toContain(
      "the server exited (exit code 3); it printed: ERROR: GITHUB_TOKEN is not set",
    );
    expect(s?.try).toBe("tenax mcp test broken");
    // No pid of a process that has ended (it may be another process's by now).
    expect(s?.pid).toBeNull();
    expect(s?.next_attempt_at).not.toBeNull();
    expect(events.filter((e) => e.type === "mcp_restart").length).toBeGreaterThanOrEqual(2);
    expect(hub.tools()).toEqual([]);
  });

  it("lists a server's remembered tools when it cannot start after a restart, each saying why it is not run", async () => {
    const records = new Map<string, unknown>();
    const store = {
      getRecord: async <T>(kind: string, key: string) => (records.get(`${kind}/${key}`) ?? null) as T | null,
      putRecord: async (kind: string, key: string, value: unknown) => {
        records.set(`${kind}/${key}`, JSON.parse(JSON.stringify(value)));
      },
    };
    const first = openHub({ fx: stdioServer() }, tempDir(), storeToolMemory(store));
    await first.hub.firstStart(10_000);
    await waitUntil(() => records.has(`${MCP_TOOLS_KIND}/fx`), 5_000, "the list to be kept");
    await first.hub.close();
    // The same server (same command), failing now: a token expired overnight.
    const second = openHub(
      { fx: stdioServer({ MCP_FIXTURE_FAIL_START: "token expired" }) },
      tempDir(),
      storeToolMemory(store),
    );
    await second.hub.firstStart(10_000);
    expect(state(second.hub, "fx")?.status).toBe("failed");
    expect(second.hub.tools().map((t) => t.spec.name)).toContain("mcp__fx__echo");
    await expect(call(second.hub, "mcp__fx__echo", { text: "x" })).rejects.toThrow(
      /^mcp__fx__echo is unavailable: MCP server "fx" has not started \(last error: the server exited \(exit code 3\); it printed: token expired.*\); it was not run$/,
    );
    // Another command is another server: what the old one listed is not shown for it.
    const third = openHub(
      { fx: { ...stdioServer({ MCP_FIXTURE_FAIL_START: "x" }), args: [FIXTURE, "--other"] } },
      tempDir(),
      storeToolMemory(store),
    );
    await third.hub.firstStart(10_000);
    expect(third.hub.tools()).toEqual([]);
  });

  it("doubles the delay for a server that dies soon after each start, instead of restarting it every second", async () => {
    // It serves for 700 ms after each start, then exits.
    const { events } = openHub({ flappy: stdioServer({ MCP_FIXTURE_EXIT_AFTER_MS: "700" }) });
    await waitUntil(
      () => events.filter((e) => e.type === "mcp_restart").length >= 4,
      20_000,
      "four restarts",
    );
    const delays = events.filter((e) => e.type === "mcp_restart").map((e) => e.delay_ms ?? 0);
    // 50, 100, 200, 400 ms with ±20% jitter (the test's backoff): each step about twice the last.
    for (let i = 1; i < 4; i++)
      expect((delays[i] as number) / (delays[i - 1] as number)).toBeGreaterThan(1.3);
    expect(events.filter((e) => e.type === "mcp_ready").length).toBeGreaterThanOrEqual(3);
  });

  it("says a command that does not exist is not found", async () => {
    const { hub } = openHub({
      missing: { command: "no-such-mcp-server-x", args: [], env: {}, timeout: 5, approve: [] },
    });
    await hub.firstStart(10_000);
    expect(state(hub, "missing")?.last_error).toMatch(
      /cannot run "no-such-mcp-server-x": no such command in PATH/,
    );
  });

  it("sees a tool added later, and leaves nothing of the server running once closed", async () => {
    const { hub, dir } = openHub({ fx: stdioServer() });
    await hub.firstStart(10_000);
    expect(await call(hub, "mcp__fx__add_tool")).toBe("added");
    await waitUntil(() => hub.tools().some((t) => t.spec.name === "mcp__fx__late"), 5_000, "the new tool");
    expect(await call(hub, "mcp__fx__late")).toBe("late");
    const child = Number(await call(hub, "mcp__fx__spawn_child"));
    const server = state(hub, "fx")?.pid as number;
    expect(pidAlive(child)).toBe(true);
    // The server and its child carry the profile's marks: a crashed gateway's next start finds them.
    const marked = await scanMarked({ profile: dir });
    expect(marked.map((p) => p.pid)).toEqual(expect.arrayContaining([server, child]));
    expect(marked.every((p) => p.marks.taskId === mcpTaskId("fx"))).toBe(true);
    await hub.close();
    await waitUntil(() => !pidAlive(child) && !pidAlive(server), 5_000, "the server's whole group to end");
    expect(state(hub, "fx")).toMatchObject({ status: "stopped", pid: null });
  });

  it("costs a turn no timer once every first start has ended", async () => {
    let sleeps = 0;
    const hub = new McpHub({
      servers: { fx: stdioServer() },
      profileDir: tempDir(),
      profileMark: tempDir(),
      owner: null,
      secrets: { names: new Set(), redactor: new Redactor([]) },
      deps: {
        ...defaultDeps,
        sleep: (ms, signal) => {
          sleeps++;
          return defaultDeps.sleep(ms, signal);
        },
      },
      redact: (t) => t,
      gate: null,
      tryCommand: (server) => `tenax mcp test ${server}`,
    });
    hubs.push(hub);
    hub.start();
    await hub.firstStart(10_000);
    expect(state(hub, "fx")?.status).toBe("ready");
    const before = sleeps;
    for (let i = 0; i < 5; i++) await hub.firstStart(10_000);
    expect(sleeps).toBe(before);
  });

  it("lets no one wait on a first start the server was stopped during", async () => {
    const silent: McpServerConfig = {
      command: process.execPath,
      args: ["-e", "setInterval(() => {}, 1000)"],
      env: {},
      timeout: 60,
      approve: [],
    };
    const { hub } = openHub({ silent });
    await waitUntil(() => (state(hub, "silent")?.pid ?? null) !== null, 5_000, "the server to run");
    await hub.close();
    const started = Date.now();
    await hub.firstStart(30_000);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("shows a command line with what a secret variable put in it redacted", async () => {
    const hub = new McpHub({
      servers: { fx: { ...stdioServer(), args: [FIXTURE, "--token=sekret-token-value"] } },
      profileDir: tempDir(),
      profileMark: tempDir(),
      owner: null,
      secrets: { names: new Set(), redactor: new Redactor([]) },
      deps: defaultDeps,
      redact: (t) => t.replaceAll("sekret-token-value", "[redacted:TOKEN]"),
      gate: null,
      tryCommand: (server) => `tenax mcp test ${server}`,
    });
    hubs.push(hub);
    expect(state(hub, "fx")?.target).toBe(`${process.execPath} ${FIXTURE} --token=[redacted:TOKEN]`);
  });
});

describe("MCP servers over Streamable HTTP", () => {
  async function httpFixture(port = 0): Promise<{ child: ChildProcess; port: number }> {
    const child = spawn(process.execPath, [FIXTURE, "--http", String(port)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(child);
    const bound = await new Promise<number>((resolve, reject) => {
      child.stdout?.on("data", (chunk: Buffer) => {
        const m = /listening (\d+)/.exec(chunk.toString());
        if (m) resolve(Number(m[1]));
      });
      child.once("exit", (code) => reject(new Error(`the HTTP fixture exited (${code})`)));
    });
    return { child, port: bound };
  }

  it("calls its tools, sees it go away, and comes back when it does", async () => {
    const first = await httpFixture();
    const url = `http://127.0.0.1:${first.port}/mcp`;
    const { hub } = openHub({ remote: { url, headers: {}, timeout: 5, approve: [] } });
    await hub.firstStart(10_000);
    expect(state(hub, "remote")).toMatchObject({ status: "ready", transport: "http", target: url });
    expect(await call(hub, "mcp__remote__echo", { text: "over http" })).toBe("echo: over http");

    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    // Either the call finds it gone (and it was not run), or the ping found it first.
    await expect(call(hub, "mcp__remote__echo", { text: "x" })).rejects.toThrow(
      /mcp__remote__echo is unavailable: .*it was not run/,
    );
    await waitUntil(() => state(hub, "remote")?.status === "restarting", 5_000, "the server to be seen down");

    await httpFixture(first.port);
    await waitUntil(() => state(hub, "remote")?.status === "ready", 10_000, "the server to be back");
    expect(await call(hub, "mcp__remote__echo", { text: "again" })).toBe("echo: again");
  });
});
