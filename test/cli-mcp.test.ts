// `tenax mcp list` and `tenax mcp test NAME` as a user runs them: the built CLI on a throwaway
// home, against the real MCP server of test/fixtures/mcp-server.mjs over stdio and over Streamable
// HTTP, and a real gateway for the live state. Each stdio server gets an argument no other test
// uses, so the processes looked for after a command are this test's and no one else's.
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { McpServerState } from "../src/agent/mcp/mcp-types.js";
import { pidAlive } from "../src/agent/process-group.js";
import { BIN, cliEnvironment, ROOT, requireBuild, tenaxAsync } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { startGateway } from "./helpers/gateway.js";
import { processesOf, watch } from "./helpers/procs.js";
import { profileWith, tempHome } from "./helpers/temp-home.js";
import { untilValue } from "./helpers/until.js";

const FIXTURE = join(ROOT, "test", "fixtures", "mcp-server.mjs");
const SECRET_HEADER = "Bearer sekret-value-123";
const SECRET_ARG = "tok-arg-secret-987654321";

beforeAll(requireBuild);

const fixtures: ChildProcess[] = [];
afterEach(() => {
  for (const child of fixtures.splice(0)) child.kill("SIGKILL");
});

/** A stdio server of the fixture, and the argv its process runs with (unique to this call). */
function stdioServer(env: Record<string, string> = {}, extraArgs: string[] = []) {
  const mark = `--test-mark=${randomUUID()}`;
  const args = [FIXTURE, mark, ...extraArgs];
  watch([process.execPath, ...args]);
  const yaml = `{ command: ${JSON.stringify(process.execPath)}, args: ${JSON.stringify(args)}, env: ${JSON.stringify(env)}, timeout: 10 }`;
  return { yaml, argv: [process.execPath, ...args] };
}

/** The fixture over Streamable HTTP, as a process of its own; its URL. */
async function httpFixture(): Promise<string> {
  const child = spawn(process.execPath, [FIXTURE, "--http", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  fixtures.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      const m = /listening (\d+)/.exec(chunk.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`the HTTP fixture exited (${code})`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

/** A profile with these servers under mcp.servers, a gateway port nothing listens on, and a .env. */
async function profileWithServers(servers: Record<string, string>, dotenv = "") {
  const port = await freePort();
  const lines = Object.entries(servers).map(([name, yaml]) => `    ${name}: ${yaml}`);
  return profileWith(`gateway: { port: ${port} }\nmcp:\n  servers:\n${lines.join("\n")}\n`, dotenv);
}

describe("tenax mcp list", () => {
  it("says when no server is configured, with an example to copy", async () => {
    const home = tempHome();
    const [run, json] = await Promise.all([
      tenaxAsync(home, ["mcp", "list"]),
      tenaxAsync(home, ["mcp", "list", "--json"]),
    ]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("no MCP servers are configured for profile 'default'");
    expect(run.stdout).toContain(
      'mcp:\n  servers:\n    files: { command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] }\n',
    );
    expect(run.stdout).toContain("tenax mcp test files");
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ servers: [], gateway: null });
  });

  it("shows each server's command or URL, never a header's value or a secret variable, and says where they run", async () => {
    const fx = stdioServer({ ROOT: "/srv/data" }, [`--token=\${MCP_LIST_TOKEN}`]);
    const paths = await profileWithServers(
      {
        fx: fx.yaml,
        remote: `{ url: "http://127.0.0.1:9/mcp?key=in-the-query", headers: { Authorization: "${SECRET_HEADER}" }, timeout: 5, approve: all }`,
      },
      `MCP_LIST_TOKEN=${SECRET_ARG}\n`,
    );
    const [run, json] = await Promise.all([
      tenaxAsync(paths.home, ["mcp", "list"]),
      tenaxAsync(paths.home, ["mcp", "list", "--json"]),
    ]);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/NAME\s+TRANSPORT\s+TARGET\s+TIMEOUT\s+APPROVE\s+STATE/);
    expect(run.stdout).toMatch(
      new RegExp(
        `fx\\s+stdio\\s+${process.execPath} ${FIXTURE} --test-mark=\\S+ --token=\\[redacted:MCP_LIST_TOKEN\\]\\s+10 s\\s+-\\s+-`,
      ),
    );
    expect(run.stdout).toMatch(/remote\s+http\s+http:\/\/127\.0\.0\.1:9\/mcp\s+5 s\s+all\s+-/);
    expect(run.stdout).toContain("the servers run inside the gateway and tenax chat");
    expect(run.stdout).toContain("tenax mcp test NAME starts one here");

    expect(json.status).toBe(0);
    const doc = JSON.parse(json.stdout) as { servers: unknown[]; gateway: { answered: boolean } };
    expect(doc.servers).toEqual([
      {
        name: "fx",
        transport: "stdio",
        target: expect.stringMatching(
          /^\S+ \S+mcp-server\.mjs --test-mark=\S+ --token=\[redacted:MCP_LIST_TOKEN\]$/,
        ),
        timeout: 10,
        approve: [],
        live: null,
      },
      {
        name: "remote",
        transport: "http",
        target: "http://127.0.0.1:9/mcp",
        timeout: 5,
        approve: "all",
        live: null,
      },
    ]);
    expect(doc.gateway.answered).toBe(false);
    for (const output of [run.stdout, run.stderr, json.stdout, json.stderr]) {
      expect(output).not.toContain("sekret-value-123");
      expect(output).not.toContain(SECRET_ARG);
      expect(output).not.toContain("in-the-query");
      expect(output).not.toContain("/srv/data");
    }
  });

  it("shows the running gateway's state of each server: ready with its tools, or why it failed", async () => {
    const fx = stdioServer();
    const broken = stdioServer({ MCP_FIXTURE_FAIL_START: "ERROR: GITHUB_TOKEN is not set" });
    const paths = await profileWithServers({ fx: fx.yaml, broken: broken.yaml });
    const gw = await startGateway(paths.home);
    const live = await untilValue(
      async () => {
        const run = await tenaxAsync(paths.home, ["mcp", "list", "--json"]);
        const doc = JSON.parse(run.stdout) as { servers: { name: string; live: McpServerState | null }[] };
        return new Map(doc.servers.map((s) => [s.name, s.live]));
      },
      (seen) => seen.get("fx")?.status === "ready" && seen.get("broken")?.last_error != null,
      10_000,
      "the gateway to have started fx and tried broken",
    );
    expect(live.get("fx")).toMatchObject({ status: "ready", tools: 9, transport: "stdio" });
    expect(live.get("broken")?.status).toBe("failed");

    const run = await tenaxAsync(paths.home, ["mcp", "list"]);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/fx\s+stdio\s+.*\s+ready, 9 tool\(s\)\n/);
    expect(run.stdout).toMatch(/broken\s+stdio\s+.*\s+failed\n/);
    expect(run.stdout).toMatch(
      /broken: failed: the server exited \(exit code 3\); it printed: ERROR: GITHUB_TOKEN is not set; .*see it start with tenax mcp test broken/,
    );
    expect(run.stdout).toContain(`STATE is the running gateway's (${gw.url})`);
    expect(processesOf(fx.argv)).toHaveLength(1);

    // A gateway that stops ends its servers' whole process groups.
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(processesOf(fx.argv)).toEqual([]);
  });
});

describe("tenax mcp test", () => {
  it("starts the server alone, lists the tools under the model's names, calls none, and leaves nothing running", async () => {
    const fx = stdioServer();
    const paths = await profileWithServers({ fx: fx.yaml });
    const run = await tenaxAsync(paths.home, ["mcp", "test", "fx"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('starting MCP server "fx" (stdio: ');
    expect(run.stdout).toMatch(
      /MCP server "fx" is ready with 9 tool\(s\), started in \d+\.\d s; the model sees:/,
    );
    expect(run.stdout).toMatch(/mcp__fx__echo\s+Say the text back\.\n/);
    expect(run.stdout).toMatch(/mcp__fx__add\s+Add two numbers\.\n/);
    expect(run.stdout).toMatch(/mcp__fx__spawn_child\s+Start a long sleep of its own; its pid\.\n/);
    expect(processesOf(fx.argv)).toEqual([]);

    const json = await tenaxAsync(paths.home, ["mcp", "test", "fx", "--json"]);
    expect(json.status).toBe(0);
    const doc = JSON.parse(json.stdout) as {
      server: string;
      status: string;
      pid: number;
      error: string | null;
      tools: { name: string; server_name: string; description: string }[];
    };
    expect(doc).toMatchObject({ server: "fx", status: "ready", error: null });
    expect(doc.tools).toContainEqual({
      name: "mcp__fx__echo",
      server_name: "echo",
      description: "Say the text back.",
      approve: false,
    });
    expect(doc.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(["mcp__fx__add", "mcp__fx__hang", "mcp__fx__crash", "mcp__fx__picture"]),
    );
    // The server ran (its pid was seen), and it is gone with the command.
    expect(doc.pid).toBeGreaterThan(0);
    expect(pidAlive(doc.pid)).toBe(false);
    expect(processesOf(fx.argv)).toEqual([]);
  });

  it("says why a server did not start (its exit code and what it printed), with exit 1", async () => {
    const broken = stdioServer({ MCP_FIXTURE_FAIL_START: "ERROR: GITHUB_TOKEN is not set" });
    const paths = await profileWithServers({ broken: broken.yaml });
    const [run, json] = await Promise.all([
      tenaxAsync(paths.home, ["mcp", "test", "broken"]),
      tenaxAsync(paths.home, ["mcp", "test", "broken", "--json"]),
    ]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      'error: MCP server "broken" did not start: the server exited (exit code 3); it printed: ERROR: GITHUB_TOKEN is not set\n',
    );
    expect(run.stderr).toContain(
      `check mcp.servers.broken (command, args, env, cwd, timeout) in ${paths.config}, then run: tenax mcp test broken`,
    );

    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      server: "broken",
      status: "failed",
      tools: [],
      error: expect.stringContaining("exit code 3"),
    });
    expect(processesOf(broken.argv)).toEqual([]);
  });

  it("gives up on a server that does not answer within its timeout, or at Ctrl-C, and ends it either way", async () => {
    // A command that starts and never speaks MCP.
    const mark = `--test-mark=${randomUUID()}`;
    const args = ["-e", "setInterval(() => {}, 1000)", "--", mark];
    const argv = [process.execPath, ...args];
    watch(argv);
    const silent = (timeout: number) =>
      `{ command: ${JSON.stringify(process.execPath)}, args: ${JSON.stringify(args)}, start_timeout: ${timeout} }`;
    const paths = await profileWithServers({ silent: silent(1), patient: silent(60) });

    const started = Date.now();
    const run = await tenaxAsync(paths.home, ["mcp", "test", "silent", "--json"]);
    expect(run.status).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/timed out|within 1 s/),
    });
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(processesOf(argv)).toEqual([]);

    const child = spawn(process.execPath, [BIN, "mcp", "test", "patient"], {
      cwd: ROOT,
      env: cliEnvironment(paths.home),
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    await untilValue(
      () => processesOf(argv).length,
      (n) => n === 1,
      10_000,
      "the server to run",
    );
    child.kill("SIGINT");
    expect(await closed).toBe(1);
    expect(stderr).toContain(
      'error: MCP server "patient" did not start: interrupted before it finished starting',
    );
    expect(processesOf(argv)).toEqual([]);
  });

  it("starts a Streamable HTTP server and never shows its headers", async () => {
    const url = await httpFixture();
    const paths = await profileWithServers({
      remote: `{ url: "${url}", headers: { Authorization: "${SECRET_HEADER}" }, timeout: 5, approve: [echo] }`,
    });
    const run = await tenaxAsync(paths.home, ["mcp", "test", "remote", "--json"]);
    expect(run.status).toBe(0);
    const doc = JSON.parse(run.stdout) as { status: string; transport: string; tools: unknown[] };
    expect(doc).toMatchObject({ status: "ready", transport: "http", target: url });
    expect(doc.tools).toContainEqual({
      name: "mcp__remote__echo",
      server_name: "echo",
      description: "Say the text back.",
      approve: true,
    });
    expect(`${run.stdout}${run.stderr}`).not.toContain("sekret-value-123");
  });

  it("refuses a server that is not configured, naming the ones that are (exit 2)", async () => {
    const paths = await profileWithServers({ fx: stdioServer().yaml, other: stdioServer().yaml });
    const [run, json] = await Promise.all([
      tenaxAsync(paths.home, ["mcp", "test", "nope"]),
      tenaxAsync(paths.home, ["mcp", "test", "nope", "--json"]),
    ]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`error: there is no MCP server "nope" in ${paths.config} (mcp.servers)`);
    expect(run.stderr).toContain("the configured ones: fx, other");
    expect(json.status).toBe(2);
    expect(JSON.parse(json.stdout).error).toMatchObject({
      code: "usage",
      data: { configured: ["fx", "other"] },
    });
  });
});
