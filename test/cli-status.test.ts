// `tenax status` on a healthy profile, one whose gateway is not running or crashed, one whose store
// is damaged, and one with spooled writes: the broken layer is named, the exit code follows the
// contract, the printed command works.
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import type { SessionCreateOp } from "../src/store/ops.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { Spool } from "../src/store/spool.js";
import { printedCommands, requireBuild, runPrinted, tenax, tenaxAsync } from "./helpers/cli.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";
import { writeFailingJob } from "./helpers/cron.js";
import { freePort } from "./helpers/dashboard.js";
import { startGateway } from "./helpers/gateway.js";
import { deadPid } from "./helpers/resume.js";
import { tempProfile } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

async function seeded() {
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  for (let s = 0; s < 20; s++) {
    const id = await store.createSession({ title: `session ${s}` });
    for (let i = 0; i < 5; i++)
      await store.appendMessage({ session_id: id, role: "user", content: `message ${i}` });
  }
  await releaseStore(store);
  return paths;
}

describe("tenax status", () => {
  it("is ok, exit 0, on a healthy profile whose gateway runs, with the built-in simulator", async () => {
    const paths = await seeded();
    const gw = await startGateway(paths.home);
    const run = tenax(paths.home, ["status"]);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^Tenax profile 'default': ok\n/);
    expect(run.stdout).toMatch(new RegExp(`gateway\\s+ok\\s+serving on ${gw.url} \\(pid ${gw.child.pid}\\)`));
    expect(run.stdout).toMatch(/store\s+ok\s+.*state\.db: 20 sessions, 100 messages/);
    expect(run.stdout).toMatch(/providers\s+ok\s+none configured: the built-in local simulator answers/);
    expect(run.stdout).toMatch(
      /scheduler\s+ok\s+\d+ of the gateway's own timers \(health checks, leases, upkeep\); woke \d+ ms late/,
    );
    // The policy in force, with the defaults: commands ask, files stay in the working folder.
    expect(run.stdout).toMatch(/tools\s+ok\s+commands: ask \(.*\); files: the working folder only/);
    expect(run.stdout).toMatch(/cron\s+ok\s+no cron jobs\n/);
  });

  it("names each pending approval with the command that lists them, which works as printed", async () => {
    const paths = await seeded();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "waiting" });
    const now = Date.now();
    await store.putRecord(
      "approval",
      "ap_waiting",
      {
        approval_id: "ap_waiting",
        session_id: session,
        turn_id: "t_1",
        tool_call_id: "call_1",
        tool: "terminal",
        command: "rm -rf /srv/old",
        reason: "recursive delete",
        dangers: [],
        pattern: "rm *",
        requested_by: "runs API, run run_1",
        created_at: now,
        expires_at: now + 300_000,
        status: "pending",
        decision: null,
        decided_by: null,
        decided_at: null,
      },
      { sessionId: session },
    );
    await store.putRecord(
      "approval_pending",
      "ap_waiting",
      { approval_id: "ap_waiting" },
      { sessionId: session },
    );
    await releaseStore(store);
    const run = tenax(paths.home, ["status", "--json"]);
    const tools = JSON.parse(run.stdout).components.tools;
    expect(tools).toMatchObject({
      status: "ok",
      exec_mode: "ask",
      file_mode: "roots",
      next: "tenax approvals list",
    });
    expect(tools.pending.map((p: { approval_id: string }) => p.approval_id)).toEqual(["ap_waiting"]);
    const listed = tenax(paths.home, ["approvals", "list"]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain("rm -rf /srv/old");
  });

  it("names a failing cron job with its streak, error and command, from the store and from the gateway", async () => {
    const paths = await seeded();
    // A port of its own: a gateway the developer runs on 8642 must not change what this says.
    writeFileSync(paths.config, `gateway: { port: ${await freePort()} }\n`, { mode: 0o600 });
    await writeFailingJob(paths, "nightly-report", "rate_limit: the provider refused (429)");

    // No gateway: the same rules over the store alone, saying where the scheduler runs.
    const alone = tenax(paths.home, ["status", "--json"]);
    expect(alone.status).toBe(2);
    const fromStore = JSON.parse(alone.stdout).components.cron;
    expect(fromStore).toMatchObject({
      status: "degraded",
      next: "tenax cron runs nightly-report",
      jobs: 1,
      failing: [{ job: "nightly-report", streak: 3, last_error: "rate_limit: the provider refused (429)" }],
      lag_ms: null,
    });
    expect(fromStore.detail).toContain("nightly-report failed 3 runs in a row");
    expect(fromStore.detail).toContain(
      "the scheduler runs only inside a gateway (tenax up) or with tenax cron tick",
    );

    // The gateway runs: its own cron component, and the exit code follows it (degraded, 1).
    const gw = await startGateway(paths.home);
    const run = tenax(paths.home, ["status", "--json"]);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.status).toBe("degraded");
    expect(report.components.gateway.status).toBe("ok");
    expect(report.components.cron).toMatchObject({
      status: "degraded",
      next: "tenax cron runs nightly-report",
    });
    expect(report.components.cron.detail).not.toContain("no gateway runs");
    const human = tenax(paths.home, ["status"]);
    expect(human.status).toBe(1);
    expect(human.stdout).toMatch(/^Tenax profile 'default': degraded \(cron degraded\)\n/);
    expect(human.stdout).toMatch(/cron\s+degraded\s+nightly-report failed 3 runs in a row/);
    expect(human.stdout).toContain("next (cron): tenax cron runs nightly-report");
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
  });

  it("is down, exit 2, naming the gateway when it is not running, and when it crashed", async () => {
    const paths = await seeded();
    // A port of its own: a gateway the developer runs on 8642 must not change what this says.
    const port = await freePort();
    writeFileSync(paths.config, `gateway: { port: ${port} }\n`, { mode: 0o600 });
    const run = tenax(paths.home, ["status"]);
    expect(run.status).toBe(2);
    expect(run.stdout).toMatch(/^Tenax profile 'default': down \(gateway down, scheduler down\)/);
    expect(run.stdout).toMatch(
      new RegExp(`gateway\\s+down\\s+not running: http://127\\.0\\.0\\.1:${port} does not answer`),
    );
    expect(run.stdout).toContain("next (gateway): tenax up (or tenax gateway start for the service)");
    expect(run.stdout).toMatch(/store\s+ok/);

    // A pid file naming a process that is gone: the gateway crashed.
    const gw = await startGateway(paths.home);
    gw.child.kill("SIGKILL");
    await gw.exited;
    const json = tenax(paths.home, ["status", "--json"]);
    expect(json.status).toBe(2);
    const report = JSON.parse(json.stdout);
    expect(report.components.gateway).toMatchObject({ status: "down", pid: gw.child.pid });
    expect(report.components.gateway.detail).toMatch(
      new RegExp(`gateway pid ${gw.child.pid} is gone without a clean stop \\(a crash\\)`),
    );
    expect(report.components.scheduler.status).toBe("down");
  });

  it("never takes a stranger on the gateway's port for this profile's gateway, with or without a dead pid file", async () => {
    const paths = await seeded();
    // Another program (or another profile's gateway) answering everything with 200.
    const stranger = createServer((_req, res) => res.end('{"status":"ok"}'));
    await new Promise<void>((r) => stranger.listen(0, "127.0.0.1", r));
    const port = (stranger.address() as AddressInfo).port;
    try {
      writeFileSync(paths.config, `gateway: { port: ${port} }\n`, { mode: 0o600 });
      // (Async: the stranger answers from this process, which a spawnSync would block.)
      const none = JSON.parse((await tenaxAsync(paths.home, ["status", "--json"])).stdout);
      expect(none.components.gateway).toMatchObject({ status: "down", pid: null });
      expect(none.components.gateway.detail).toMatch(/this profile has no gateway pid file/);
      // Its own gateway crashed (the pid file names a process that is gone) and the stranger holds the port.
      const gone = await deadPid();
      writeFileSync(paths.pid, JSON.stringify({ pid: gone, host: "127.0.0.1", port }), { mode: 0o600 });
      const crashed = await tenaxAsync(paths.home, ["status", "--json"]);
      expect(crashed.status).toBe(2);
      const report = JSON.parse(crashed.stdout);
      expect(report.components.gateway.status).toBe("down");
      expect(report.components.gateway.detail).toMatch(/is gone without a clean stop \(a crash\)/);
      expect(report.components.gateway.detail).toContain(
        `http://127.0.0.1:${port} answers, but not as this profile's gateway`,
      );
      expect(report.components.scheduler.status).toBe("down");
    } finally {
      await new Promise((r) => stranger.close(r));
    }
  });

  it("names the store as down, exit 2, when it is damaged, with a salvage command that works as printed", async () => {
    const paths = await seeded();
    checkpoint(paths.state);
    overwritePages(
      paths.state,
      btreePages(paths.state, "sessions").map((p) => p.pageno),
      "garbage",
      3,
    );
    const run = tenax(paths.home, ["status", "--json"]);
    expect(run.status).toBe(2);
    const report = JSON.parse(run.stdout);
    expect(report.status).toBe("down");
    expect(report.components.store.status).toBe("down");
    expect(report.components.providers.status).toBe("ok");
    const text = tenax(paths.home, ["status"]);
    expect(text.stdout).toMatch(/store\s+down\s+.*state\.db cannot be read/);
    const command = printedCommands(text.stdout).find((c) => c.includes("recover"));
    expect(command).toBe(`tenax sessions recover --source ${paths.state} --inspect-only`);
    const inspect = runPrinted(paths.home, command ?? "");
    expect(inspect.stdout).toMatch(/sessions +\d+ +\d+ +\d+/);
  });

  it("shows the store degraded while writes wait in the spool", async () => {
    const paths = await seeded();
    const spool = new Spool(paths.spool, paths.name, paths.state);
    const create: SessionCreateOp = {
      op: "session.create",
      id: "s_spooled",
      title: "spooled",
      source: "test",
      model: null,
      parent_session_id: null,
      created_at: Date.now(),
      metadata: null,
    };
    spool.append([create], "the disk was full", Date.now());
    spool.close();
    // No gateway runs here (it would replay the spool as it opens the store): the gateway is down too.
    const run = tenax(paths.home, ["status"]);
    expect(run.status).toBe(2);
    expect(run.stdout).toMatch(
      /^Tenax profile 'default': down \(gateway down, store degraded, scheduler down\)/,
    );
    expect(run.stdout).toMatch(/store\s+degraded\s+.*1 writes wait in/);
  });

  it("is degraded, exit 1, while the summarizer cools down after failures", async () => {
    const paths = await seeded();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const now = Date.now();
    await store.putRecord("component", "compression", {
      failures: 2,
      cooldown_until: now + 5 * 60_000,
      failed_at: now,
      last_error: "summarizer timed out",
    });
    await releaseStore(store);
    await startGateway(paths.home);
    const run = tenax(paths.home, ["status", "--json"]);
    expect(run.status).toBe(1);
    expect(JSON.parse(run.stdout).components.gateway.status).toBe("ok");
    const report = JSON.parse(run.stdout);
    expect(report.components.compression).toMatchObject({ status: "degraded", failures: 2 });
    expect(report.components.compression.detail).toMatch(
      /failed 2 times in a row \(summarizer timed out\); automatic compression waits [45] min/,
    );
    expect(report.components.store.status).toBe("ok");
  });
});
