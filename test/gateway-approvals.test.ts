// Approvals through a real gateway process (the built CLI) and its runs API, over a simulator on
// real HTTP and a real shell: a dangerous command a run's turn asks for waits on a pending record
// (an `approval_requested` event on the run's stream), is denied (the files it would have removed
// are still there) or approved (it runs), expires as denied, and survives a gateway killed while it
// is pending: the resumed turn waits on the same record. A chat completion, which no one can answer
// for, has the same command denied at once, with a reason the model can read.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Simulator } from "../src/llm/simulator/server.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

/** Poll an async check every 50 ms until it holds. */
async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Ends a gateway the test started (the helpers kill what is left after each test too). */
async function stop(gw: GatewayProcess): Promise<void> {
  gw.child.kill("SIGTERM");
  await gw.exited;
}

interface Approval {
  approval_id: string;
  status: string;
  command: string;
  dangers: Array<{ rule: string }>;
  decided_by: string | null;
}

/** A folder with a file in it, and the dangerous command that would remove everything there. */
function victim(victims: string) {
  const dir = mkdtempSync(join(victims, "victim-"));
  mkdirSync(join(dir, "sub"));
  writeFileSync(join(dir, "sub", "keep.txt"), "precious\n");
  return { dir, file: join(dir, "sub", "keep.txt"), command: `cd ${dir} && rm -rf *` };
}

/**
 * A gateway's profile whose commands ask, with a folder for victims that its commands may write
 * (a working root: in the sandbox, a command reaches nothing else of the machine).
 */
async function askingProfile(exec = "mode: ask") {
  const victims = tempDir("tenax-victims-");
  const made = await simProfile("", `tools: { exec: { ${exec} }, files: { roots: ["${victims}"] } }`);
  return { ...made, victims };
}

function script(sim: Simulator, command: string) {
  sim.script([
    { type: "tool_calls", calls: [{ name: "terminal", arguments: { command } }] },
    { type: "reply", text: "done" },
  ]);
}

async function submitRun(gw: GatewayProcess, text: string): Promise<string> {
  const response = await gw.fetch("/v1/runs", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function approvalsOf(gw: GatewayProcess, runId: string): Promise<Approval[]> {
  const response = await gw.fetch(`/v1/runs/${runId}/approvals`);
  return ((await response.json()) as { data: Approval[] }).data;
}

async function pendingOf(gw: GatewayProcess, runId: string): Promise<Approval> {
  let found: Approval | undefined;
  await until(async () => {
    found = (await approvalsOf(gw, runId)).find((a) => a.status === "pending");
    return found !== undefined;
  }, 20_000);
  return found as Approval;
}

function decide(gw: GatewayProcess, runId: string, approvalId: string, decision: string) {
  return gw.fetch(`/v1/runs/${runId}/approvals/${approvalId}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ decision }),
  });
}

/** The run's whole event stream (it has ended): the event names and their data. */
async function runEvents(gw: GatewayProcess, runId: string): Promise<Array<Record<string, unknown>>> {
  const text = await (await gw.fetch(`/v1/runs/${runId}/events`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

async function finished(gw: GatewayProcess, runId: string): Promise<{ status: string; reply: string }> {
  let state = { status: "running", reply: "" };
  await until(async () => {
    state = (await (await gw.fetch(`/v1/runs/${runId}`)).json()) as typeof state;
    return state.status !== "running" && state.status !== "queued";
  }, 20_000);
  return state;
}

/** What the model was told of its last tool call (the simulator's last request). */
function lastToolResult(sim: Simulator): string {
  const body = sim.requests().at(-1)?.body as { messages: Array<{ role: string; content: string }> };
  return body.messages.filter((m) => m.role === "tool").at(-1)?.content ?? "";
}

describe("tenax gateway run: approvals for what the exec policy holds back", () => {
  it("a run's dangerous command waits; denied it leaves the files, approved it runs; the stream tells both", async () => {
    const { sim, home, victims } = await askingProfile();
    const gw = await startGateway(home);
    try {
      const denied = victim(victims);
      script(sim, denied.command);
      const first = await submitRun(gw, "clean up");
      const asked = await pendingOf(gw, first);
      expect(asked.command).toBe(denied.command);
      expect(asked.dangers.map((d) => d.rule)).toContain("recursive-delete");
      expect(existsSync(denied.file)).toBe(true);
      // /health says what waits.
      const health = (await (await gw.fetch("/health")).json()) as {
        components: { tools: { exec_mode: string; pending: Array<{ approval_id: string }>; next: string } };
      };
      expect(health.components.tools.exec_mode).toBe("ask");
      expect(health.components.tools.pending.map((p) => p.approval_id)).toEqual([asked.approval_id]);
      expect(health.components.tools.next).toBe("tenax approvals list");
      // The printed next command works as printed, beside the running gateway.
      const listed = await tenaxAsync(home, ["approvals", "list"]);
      expect(listed.status).toBe(0);
      expect(listed.stdout).toContain(asked.approval_id);
      expect(listed.stdout).toContain("pending");
      const answer = await decide(gw, first, asked.approval_id, "deny");
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as Approval).status).toBe("denied");
      expect((await finished(gw, first)).status).toBe("completed");
      expect(existsSync(denied.file)).toBe(true);
      expect(lastToolResult(sim)).toContain("denied by runs API");
      // A second answer is a conflict, and says what it was.
      const late = await decide(gw, first, asked.approval_id, "approve");
      expect(late.status).toBe(409);
      expect(((await late.json()) as { error: { code: string } }).error.code).toBe("approval_decided");
      const shown = await tenaxAsync(home, ["approvals", "show", asked.approval_id, "--json"]);
      expect(shown.status).toBe(0);
      expect(JSON.parse(shown.stdout).approval).toMatchObject({
        status: "denied",
        decision: "deny",
        command: denied.command,
        requested_by: `runs API, run ${first}`,
      });
      expect((await tenaxAsync(home, ["approvals", "list"])).stdout).toContain("no approval is pending");
      const types = (await runEvents(gw, first)).map((e) => e.type);
      expect(types).toContain("approval_requested");
      expect(types).toContain("approval_decided");

      const approved = victim(victims);
      script(sim, approved.command);
      const second = await submitRun(gw, "clean up again");
      const again = await pendingOf(gw, second);
      expect(existsSync(approved.file)).toBe(true);
      expect((await decide(gw, second, again.approval_id, "approve")).status).toBe(200);
      expect((await finished(gw, second)).status).toBe("completed");
      expect(existsSync(approved.file)).toBe(false);
      // An approval of another run is not this run's to decide.
      expect((await decide(gw, first, again.approval_id, "approve")).status).toBe(404);
    } finally {
      await stop(gw);
    }
  });

  it("a pending approval expires as denied after tools.exec.approval_timeout", async () => {
    const { sim, home, victims } = await askingProfile("mode: ask, approval_timeout: 1");
    const gw = await startGateway(home);
    try {
      const target = victim(victims);
      script(sim, target.command);
      const run = await submitRun(gw, "clean up");
      expect((await finished(gw, run)).status).toBe("completed");
      expect(existsSync(target.file)).toBe(true);
      expect((await approvalsOf(gw, run)).map((a) => a.status)).toEqual(["expired"]);
      expect(lastToolResult(sim)).toContain("expired");
    } finally {
      await stop(gw);
    }
  });

  it("survives a gateway killed while it is pending: the resumed turn waits on the same record", async () => {
    const { sim, home, victims } = await askingProfile();
    const target = victim(victims);
    script(sim, target.command);
    const first = await startGateway(home);
    const run = await submitRun(first, "clean up");
    const asked = await pendingOf(first, run);
    first.child.kill("SIGKILL");
    await first.exited;
    const second = await startGateway(home);
    try {
      const resumed = await pendingOf(second, run);
      expect(resumed.approval_id).toBe(asked.approval_id);
      expect(existsSync(target.file)).toBe(true);
      expect((await decide(second, run, asked.approval_id, "approve")).status).toBe(200);
      expect((await finished(second, run)).status).toBe("completed");
      expect(existsSync(target.file)).toBe(false);
      expect(await approvalsOf(second, run)).toHaveLength(1);
    } finally {
      await stop(second);
    }
  });

  it("a chat completion's dangerous command is denied at once, with a reason the model reads", async () => {
    const { sim, home, victims } = await askingProfile();
    const gw = await startGateway(home);
    try {
      const target = victim(victims);
      script(sim, target.command);
      const started = Date.now();
      const response = await gw.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "clean up" }] }),
      });
      expect(response.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(existsSync(target.file)).toBe(true);
      const told = lastToolResult(sim);
      expect(told).toContain("denied at once");
      expect(told).toContain("recursive");
      expect(told).toContain("POST /v1/runs");
    } finally {
      await stop(gw);
    }
  });
});
