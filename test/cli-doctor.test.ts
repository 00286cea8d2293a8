// `tenax doctor [--fix] [--json]` through the real CLI: each problem it looks for is made for real
// (a dead pid, an expired lease, a bad key, an open .env, a held port, damaged pages), reported
// with the next command, and repaired by --fix where that is safe.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { dashboardPidFile } from "../src/profile/dashboard-pid.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { openReader, openStore, releaseStore } from "../src/store/registry.js";
import {
  BIN,
  printedCommands,
  type Run,
  requireBuild,
  runPrinted,
  tenax,
  tenaxAsync,
} from "./helpers/cli.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";
import { freePort } from "./helpers/dashboard.js";
import { tempProfile } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function listen(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen({ port: 0, host: "127.0.0.1" }, () => {
      servers.push(server);
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address ? address.port : 0 });
    });
  });
}

/** A profile whose ports are free on this machine (8642/8080 may be taken by something else). */
async function profile(extra = ""): Promise<ProfilePaths> {
  const paths = tempProfile();
  mkdirSync(paths.dir, { recursive: true });
  const [gateway, dashboard] = [await freePort(), await freePort()];
  writeFileSync(paths.config, `gateway:\n  port: ${gateway}\ndashboard:\n  port: ${dashboard}\n${extra}`, {
    mode: 0o600,
  });
  return paths;
}

async function seeded(paths: ProfilePaths): Promise<string> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  let first = "";
  for (let s = 0; s < 20; s++) {
    const id = await store.createSession({ title: `session ${s}` });
    first ||= id;
    for (let i = 0; i < 5; i++)
      await store.appendMessage({ session_id: id, role: "user", content: `message ${i}` });
  }
  await releaseStore(store);
  return first;
}

interface CheckJson {
  name: string;
  status: string;
  detail: string;
  next?: string;
  fix?: string;
  fixed?: string;
}

function checkOf(run: Run, name: string): CheckJson {
  const report = JSON.parse(run.stdout) as { checks: CheckJson[] };
  const check = report.checks.find((c) => c.name === name);
  if (!check) throw new Error(`no check ${name} in ${run.stdout}`);
  return check;
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return child.pid ?? 0;
}

describe("tenax doctor", () => {
  it("passes a healthy profile (exit 0), with every check in one JSON document", async () => {
    const paths = await profile();
    await seeded(paths);
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(run.status).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.profile).toBe("default");
    expect(report.checks.map((c: CheckJson) => c.name)).toEqual([
      "config",
      "ports",
      "permissions",
      "store integrity",
      "search index",
      "spool",
      "pid file",
      "lock files",
      "stale sessions",
      "service unit",
      "sqlite",
      "git",
      "policy",
      "sandbox",
    ]);
    expect(report.checks.filter((c: CheckJson) => c.status === "fail")).toEqual([]);
    expect(checkOf(run, "store integrity").detail).toMatch(/quick check ok/);
    expect(checkOf(run, "sqlite").detail).toMatch(/Tenax's SQLite is 3\.(5[2-9]|[6-9]\d)\./);
    const text = await tenaxAsync(paths.home, ["doctor"]);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^Tenax doctor, profile 'default': (ok|warn)$/m);
    expect(text.stdout).toMatch(/^ {2}ok {4}ports {12}gateway 127\.0\.0\.1:\d+ free/m);
  });

  it("names an unreadable search index on its own, with the command that rebuilds it, and never blames state.db", async () => {
    const paths = await profile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.createSession({ title: "one" });
    await releaseStore(store);
    // What a full disk used to leave behind: an empty search.db.
    writeFileSync(paths.search, "");
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(run.status).toBe(0);
    expect(checkOf(run, "store integrity")).toMatchObject({ status: "ok" });
    const index = checkOf(run, "search index");
    expect(index.status).toBe("warn");
    expect(index.detail).toContain(`the index ${paths.search} cannot be opened`);
    expect(index.next).toBe("tenax sessions reindex");
    // The readers work too.
    expect((await tenaxAsync(paths.home, ["sessions", "list"])).status).toBe(0);
    expect((await tenaxAsync(paths.home, ["status"])).stdout).not.toContain("no such table");
  });

  it("reports a stale gateway pid file, and --fix removes it", async () => {
    const paths = await profile();
    const pid = deadPid();
    writeFileSync(paths.pid, `${pid}\n`);
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(run.status).toBe(0);
    expect(checkOf(run, "pid file")).toMatchObject({ status: "warn", fix: `remove ${paths.pid}` });
    expect(checkOf(run, "pid file").detail).toContain(`pid ${pid}, which is not running`);
    expect(existsSync(paths.pid)).toBe(true);
    const fixed = await tenaxAsync(paths.home, ["doctor", "--fix", "--json"]);
    expect(checkOf(fixed, "pid file")).toMatchObject({ status: "ok", fixed: `removed ${paths.pid}` });
    expect(existsSync(paths.pid)).toBe(false);
  });

  it("prints `tenax doctor --fix` as the next command, and it works as printed", async () => {
    const paths = await profile();
    writeFileSync(paths.pid, `${deadPid()}\n`);
    const run = await tenaxAsync(paths.home, ["doctor"]);
    expect(run.stdout).toMatch(/^next \(pid file\): tenax doctor --fix$/m);
    const command = printedCommands(run.stdout).find((c) => c.startsWith("tenax doctor"));
    expect(command).toBe("tenax doctor --fix");
    const printed = runPrinted(paths.home, command ?? "");
    expect(printed.stdout).toContain(`fixed: removed ${paths.pid}`);
    expect(existsSync(paths.pid)).toBe(false);
    expect(tenax(paths.home, ["doctor", "--no-such-flag"]).status).toBe(2);
  });

  it("reports a checkpoint lock left by a dead process, and --fix removes it", async () => {
    const paths = await profile();
    const lock = join(paths.home, "checkpoints", "store", "projects", "0123abcd", "lock");
    mkdirSync(join(lock, ".."), { recursive: true });
    writeFileSync(lock, `${deadPid()}\n`);
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(checkOf(run, "lock files").status).toBe("warn");
    expect(checkOf(run, "lock files").detail).toContain(lock);
    await tenaxAsync(paths.home, ["doctor", "--fix"]);
    expect(existsSync(lock)).toBe(false);
  });

  it("reports a turn left running past its lease, and --fix marks it interrupted", async () => {
    const paths = await profile();
    const session = await seeded(paths);
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const turn = await store.startTurn(session, 1, "pid:999999");
    await releaseStore(store);
    await new Promise((r) => setTimeout(r, 20));

    const text = await tenaxAsync(paths.home, ["doctor"]);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/warn +stale sessions +1 turn still marked running after the lease expired/);
    expect(text.stdout).toMatch(/--fix would mark them interrupted/);
    expect(printedCommands(text.stdout)).toContain("tenax doctor --fix");

    const fixed = await tenaxAsync(paths.home, ["doctor", "--fix", "--json"]);
    expect(fixed.status).toBe(0);
    expect(checkOf(fixed, "stale sessions")).toMatchObject({ status: "ok" });
    expect(checkOf(fixed, "stale sessions").fixed).toContain(turn);
    const reader = openReader(paths);
    try {
      expect((await reader.getTurns(session)).find((t) => t.id === turn)?.status).toBe("interrupted");
    } finally {
      reader.close();
    }
    const again = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(checkOf(again, "stale sessions").status).toBe("ok");
  });

  it("leaves expired turns to a live gateway: --fix does not open the writer then", async () => {
    const paths = await profile();
    const session = await seeded(paths);
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const turn = await store.startTurn(session, 1, "pid:999999");
    await releaseStore(store);
    await new Promise((r) => setTimeout(r, 20));
    // This test process plays the profile's running gateway.
    writeFileSync(paths.pid, `${process.pid}\n`);
    const run = await tenaxAsync(paths.home, ["doctor", "--fix", "--json"]);
    const check = checkOf(run, "stale sessions");
    expect(check.status).toBe("warn");
    expect(check.detail).toContain(`the gateway (pid ${process.pid}) interrupts them itself`);
    expect(check.fixed).toBeUndefined();
    const reader = openReader(paths);
    try {
      expect((await reader.getTurns(session)).find((t) => t.id === turn)?.status).toBe("running");
    } finally {
      reader.close();
    }
  });

  it("fails on a config error, naming the file, line and key", async () => {
    const paths = await profile("agent:\n  bogus_key: 1\n");
    const run = tenax(paths.home, ["doctor"]);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain(
      `fail  config           config error: ${paths.config}:6: agent.bogus_key: unknown key`,
    );
    expect(run.stdout).toMatch(/^Tenax doctor, profile 'default': fail$/m);
  });

  it("warns of tools.exec.mode full on a gateway that listens beyond loopback, and says how to close it", async () => {
    const paths = await profile();
    const gatewayPort = await freePort();
    const open = (mode: string) =>
      writeFileSync(
        paths.config,
        `gateway:\n  port: ${String(gatewayPort)}\n  host: 0.0.0.0\n  api_key: "tk-doctor-test-key-0123456789"\ntools:\n  exec: { mode: ${mode} }\n`,
        { mode: 0o600 },
      );
    open("full");
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(checkOf(run, "policy")).toMatchObject({ status: "warn" });
    expect(checkOf(run, "policy").detail).toContain("tools.exec.mode is full");
    expect(checkOf(run, "policy").next).toContain("tools.exec.mode: ask");
    open("ask");
    expect(checkOf(await tenaxAsync(paths.home, ["doctor", "--json"]), "policy").status).toBe("ok");
  });

  it("warns of a .env other users can read, and --fix makes it 600", async () => {
    const paths = await profile();
    writeFileSync(paths.env, "SOME_KEY=secret\n");
    chmodSync(paths.env, 0o644);
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(run.status).toBe(0);
    expect(checkOf(run, "config")).toMatchObject({ status: "warn", fix: `chmod 600 ${paths.env}` });
    expect(statSync(paths.env).mode & 0o777).toBe(0o644);
    const fixed = await tenaxAsync(paths.home, ["doctor", "--fix", "--json"]);
    expect(checkOf(fixed, "config")).toMatchObject({ status: "ok" });
    expect(checkOf(fixed, "config").fixed).toContain(paths.env);
    expect(statSync(paths.env).mode & 0o777).toBe(0o600);
  });

  it("warns of an open .env even without a config.yaml, and --fix makes it 600", () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    writeFileSync(paths.env, "SOME_KEY=secret\n");
    chmodSync(paths.env, 0o640);
    const run = tenax(paths.home, ["doctor", "--json"]);
    expect(checkOf(run, "config")).toMatchObject({ status: "warn", fix: `chmod 600 ${paths.env}` });
    tenax(paths.home, ["doctor", "--fix"]);
    expect(statSync(paths.env).mode & 0o777).toBe(0o600);
  });

  it("fails when another process holds the gateway port, naming the port and how to find the holder", async () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    const { port } = await listen();
    writeFileSync(paths.config, `gateway:\n  port: ${port}\ndashboard:\n  port: ${await freePort()}\n`, {
      mode: 0o600,
    });
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(run.status).toBe(1);
    const check = checkOf(run, "ports");
    expect(check.status).toBe("fail");
    expect(check.detail).toContain(`the gateway port ${port} is held by another process`);
    // This test process is the holder, and /proc tells the doctor so.
    expect(check.detail).toContain(`(pid ${process.pid}: `);
    expect(check.next).toContain(`ss -ltnp 'sport = :${port}'`);
  });

  it("accepts a port held by this profile's own gateway, the process its pid file names", async () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    const { port } = await listen();
    writeFileSync(paths.config, `gateway:\n  port: ${port}\ndashboard:\n  port: ${await freePort()}\n`, {
      mode: 0o600,
    });
    // This test process plays the gateway: it listens on the port and its pid is in the pid file.
    writeFileSync(paths.pid, `${process.pid}\n`);
    const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(run.status).toBe(0);
    expect(checkOf(run, "ports")).toMatchObject({ status: "ok" });
    expect(checkOf(run, "ports").detail).toContain(
      `gateway 127.0.0.1:${port} held by this profile's gateway (pid ${process.pid})`,
    );
    expect(checkOf(run, "pid file").status).toBe("ok");
  });

  it("still fails on a stranger holding the dashboard port while the dashboard pid file names another live process", async () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    const { port } = await listen();
    writeFileSync(paths.config, `gateway:\n  port: ${await freePort()}\ndashboard:\n  port: ${port}\n`, {
      mode: 0o600,
    });
    // A live process that listens on nothing: the pid file's word does not make this port ours.
    const sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      writeFileSync(dashboardPidFile(paths), JSON.stringify({ pid: sleeper.pid, host: "127.0.0.1", port }));
      const run = await tenaxAsync(paths.home, ["doctor", "--json"]);
      expect(run.status).toBe(1);
      const check = checkOf(run, "ports");
      expect(check.status).toBe("fail");
      expect(check.detail).toContain(
        `the dashboard port ${port} is held by another process (pid ${process.pid}: `,
      );
      // The same port held by the process the dashboard pid file names is the profile's own.
      writeFileSync(dashboardPidFile(paths), JSON.stringify({ pid: process.pid, host: "127.0.0.1", port }));
      const own = await tenaxAsync(paths.home, ["doctor", "--json"]);
      expect(checkOf(own, "ports")).toMatchObject({ status: "ok" });
      expect(checkOf(own, "ports").detail).toContain(
        `dashboard 127.0.0.1:${port} held by this profile's dashboard (pid ${process.pid})`,
      );
    } finally {
      sleeper.kill("SIGKILL");
    }
  });

  it("fails on a damaged store, with a salvage command that works as printed", async () => {
    const paths = await profile();
    await seeded(paths);
    checkpoint(paths.state);
    overwritePages(
      paths.state,
      btreePages(paths.state, "sessions").map((p) => p.pageno),
      "garbage",
      3,
    );
    const run = await tenaxAsync(paths.home, ["doctor"]);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/fail +store integrity +.*state\.db is damaged/);
    const command = printedCommands(run.stdout).find((c) => c.includes("recover"));
    expect(command).toBe(`tenax sessions recover --source ${paths.state} --inspect-only`);
    const inspect = runPrinted(paths.home, command ?? "");
    expect(inspect.stderr).not.toMatch(/unexpected failure/);
    expect(inspect.stdout).toMatch(/sessions +\d+ +\d+ +\d+/);
  });

  it("checks this profile's systemd user unit: ExecStart must name an existing node and bin/tenax.js", async () => {
    const paths = await profile();
    const units = join(paths.home, ".config", "systemd", "user");
    mkdirSync(units, { recursive: true });
    const unit = join(units, "tenax-gateway.service");
    writeFileSync(unit, `[Service]\nExecStart=/nowhere/node ${BIN} gateway run\n`);
    const broken = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(checkOf(broken, "service unit").status).toBe("warn");
    expect(checkOf(broken, "service unit").detail).toContain(`${unit}: ExecStart runs /nowhere/node`);
    writeFileSync(unit, `[Service]\nExecStart="${process.execPath}" ${BIN} gateway run\n`);
    const good = await tenaxAsync(paths.home, ["doctor", "--json"]);
    expect(checkOf(good, "service unit")).toMatchObject({ status: "ok" });
    expect(checkOf(good, "service unit").detail).toContain(unit);
  });
});
