// Commands in a real bubblewrap sandbox through the process registry: what they can and cannot
// reach (the parent's /proc, the profile, Tenax's home, the home's keys, folders outside the roots,
// the system's secrets; the roots, a private /tmp and home, the network), and the registry's
// mechanics with bwrap as the group's leader (exit codes, what a command leaves running, kill,
// a graceful SIGTERM, timeouts, a task's cleanup). Without bubblewrap the sandboxed part is
// skipped with a loud reason; CI installs it (.ci/run).
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { waitUntil } from "../../../test/helpers/tool-context.js";
import { groupAlive } from "../process-group.js";
import { ProcessRegistry } from "../processes.js";
import { chooseSandbox, type SandboxChoice, SandboxUnavailableError, whichBwrap } from "./sandbox.js";

const BWRAP = whichBwrap(process.env.PATH);
if (BWRAP === null)
  console.warn(
    "\n*** SKIPPED: the real sandbox tests need bubblewrap (apt-get install bubblewrap); CI installs it. ***\n",
  );

const SECRET = "zq8Hk2pLm4Rt7Vw9Xc3Bn6";
const registries: ProcessRegistry[] = [];
afterEach(async () => {
  for (const reg of registries.splice(0)) await reg.cleanupAll();
});

/** A home with Tenax's home and a profile in it, a project, a root, and a folder outside both. */
function machine() {
  const root = tempDir("tenax-sandbox-");
  const home = join(root, "home");
  const tenax = join(home, ".tenax");
  const profile = join(tenax, "profiles", "work");
  const project = join(home, "project");
  const extra = join(root, "extra");
  const outside = join(root, "outside");
  for (const dir of [profile, project, extra, outside, join(home, ".ssh")])
    mkdirSync(dir, { recursive: true });
  writeFileSync(join(tenax, ".env"), `MAIN_KEY=${SECRET}\n`);
  writeFileSync(join(profile, ".env"), `WORK_KEY=${SECRET}\n`);
  writeFileSync(join(home, ".ssh", "id_ed25519"), `${SECRET}\n`);
  writeFileSync(join(project, "README"), "the project\n");
  writeFileSync(join(outside, "notes"), "outside the roots\n");
  return { root, home, tenax, profile, project, extra, outside };
}

async function sandboxed(m: ReturnType<typeof machine>, options: { graceMs?: number } = {}) {
  const choice = await chooseSandbox("bwrap", {
    profile: { home: m.tenax, dir: m.profile },
    roots: [m.extra],
    env: { HOME: m.home, PATH: process.env.PATH },
    execPath: process.execPath,
  });
  const reg = new ProcessRegistry({ sandbox: choice.sandbox, profile: m.profile, ...options });
  registries.push(reg);
  return { reg, choice };
}

/** Runs a command to its end in `cwd`; its exit code and output. */
async function run(reg: ProcessRegistry, command: string, cwd: string) {
  const handle = await reg.launch(command, { cwd, taskId: "t1", foreground: true });
  await handle.waitForExit(AbortSignal.timeout(20_000));
  await handle.settle(2_000);
  const info = handle.info();
  const out = handle.output(100_000);
  handle.forget();
  return { code: info.exit_code, stdout: out.stdout, stderr: out.stderr };
}

describe.skipIf(BWRAP === null)("a command in the bubblewrap sandbox", () => {
  it("sees no /proc of Tenax or its parent: a pid namespace of its own", async () => {
    const m = machine();
    const { reg, choice } = await sandboxed(m);
    expect(choice.detail).toContain("bubblewrap");
    const seen = await run(
      reg,
      // (The command's own text is in /proc's cmdlines: what it prints is built when it runs.)
      `echo "pid $$ parent $PPID"; ls /proc | grep -c '^[0-9]'; test -e /proc/${process.pid} && echo "TENAX-""VISIBLE"; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; grep -ao . /proc/$PPID/environ | tr -d '\\n'`,
      m.project,
    );
    expect(seen.code).toBe(0);
    expect(seen.stdout).toMatch(/^pid [23] parent [12]\n[2-6]\n/);
    expect(seen.stdout).not.toContain("TENAX-VISIBLE");
    // Only the sandbox's own programs: not node, not vitest, not whatever started them.
    expect(seen.stdout).not.toMatch(/vitest|node /);
    expect(seen.stdout).not.toContain(SECRET);
  });

  it("reaches neither the profile nor Tenax's home nor the home's keys, by any path", async () => {
    const m = machine();
    const { reg } = await sandboxed(m);
    for (const command of [
      `cat "$TENAX_PROFILE_DIR/.env"`,
      `grep -o . ${m.tenax}/.env`,
      "cut -c 1-40 ~/.tenax/.env ~/.tenax/profiles/work/.env",
      "cat ~/.ssh/id_ed25519",
      `ls -A ${m.tenax}`,
      `cat /etc/shadow`,
    ]) {
      const seen = await run(reg, command, m.project);
      expect(seen.stdout, command).not.toContain(SECRET);
      expect(seen.stdout, command).not.toContain("MAIN_KEY");
    }
    // Its working folder inside the profile is an empty folder of its own, reached by a link too.
    const inside = await run(reg, "pwd; ls -A; cat .env", m.profile);
    expect(inside.stdout).toBe(`${m.profile}\n`);
    expect(inside.stderr).toContain(".env");
    symlinkSync(m.tenax, join(m.root, "link-to-tenax"));
    const linked = await run(reg, "ls -A; cat .env", join(m.root, "link-to-tenax"));
    expect(linked.stdout).toBe("");
    expect(linked.stderr).toContain(".env");
    // A root that holds Tenax's home (cwd = the home) shows the rest but not it, nor ~/.ssh.
    const home = await run(reg, "ls -A; ls -A .tenax .ssh; cat project/README", m.home);
    expect(home.stdout).toContain("project");
    expect(home.stdout).toContain("the project");
    expect(home.stdout).not.toMatch(/\.env|id_ed25519/);
    expect(readFileSync(join(m.tenax, ".env"), "utf8")).toContain(SECRET);
  });

  it("writes its working folder and the roots, and nothing else of the machine", async () => {
    const m = machine();
    const { reg } = await sandboxed(m);
    const seen = await run(
      reg,
      `echo made > made.txt; echo there > ${m.extra}/made.txt; cat ${m.outside}/notes; touch /usr/tenax-x; echo tmp > /tmp/tenax-sandbox-tmp; echo home > ~/made; ls -A ~; exit 3`,
      m.project,
    );
    expect(seen.code).toBe(3);
    expect(readFileSync(join(m.project, "made.txt"), "utf8")).toBe("made\n");
    expect(readFileSync(join(m.extra, "made.txt"), "utf8")).toBe("there\n");
    expect(seen.stderr).toContain(`${m.outside}/notes`);
    expect(seen.stdout).not.toContain("outside the roots");
    expect(seen.stderr).toContain("/usr/tenax-x");
    expect(existsSync("/usr/tenax-x")).toBe(false);
    // /tmp and the home are its own, empty and gone with it.
    expect(existsSync("/tmp/tenax-sandbox-tmp")).toBe(false);
    expect(existsSync(join(m.home, "made"))).toBe(false);
    expect(seen.stdout).toContain("made");
  });

  it("keeps the network: a server on loopback answers it", async () => {
    const m = machine();
    const { reg } = await sandboxed(m);
    const server = createServer((_req, res) => res.end("pong"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const seen = await run(
        reg,
        `node -e 'fetch("http://127.0.0.1:${port}/").then(r => r.text()).then(t => console.log(t))'`,
        m.project,
      );
      expect(seen.stderr).toBe("");
      expect(seen.stdout).toBe("pong\n");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a shell that exits leaving a process behind: its exit code at once, running until that ends", async () => {
    const m = machine();
    const { reg } = await sandboxed(m);
    const handle = await reg.launch("sleep 30 >/dev/null 2>&1 & exit 4", {
      cwd: m.project,
      taskId: "t1",
      foreground: true,
    });
    expect(await handle.waitForExit(AbortSignal.timeout(10_000))).toBe(true);
    expect(handle.info()).toMatchObject({ exit_code: 4, status: "running" });
    expect(handle.alive()).toBe(true);
    const killed = await handle.kill();
    expect(killed).toMatchObject({ killed: true, status: "exited", exit_code: 4 });
    expect(groupAlive(killed.pid)).toBe(false);
  });

  it("a kill gives what runs in it a graceful SIGTERM, then the whole sandbox is gone", async () => {
    const m = machine();
    const { reg } = await sandboxed(m);
    const { id, pid } = await reg.start(
      "trap 'sleep 0.5; echo cleaned > bye; exit 0' TERM; sleep 30 & echo up; wait",
      {
        cwd: m.project,
        taskId: "t1",
      },
    );
    await waitUntil(
      async () => (await reg.poll(id, "w")).stdout.includes("up"),
      10_000,
      "the command to start",
    );
    const killed = await reg.kill(id);
    expect(killed.killed).toBe(true);
    expect(readFileSync(join(m.project, "bye"), "utf8")).toBe("cleaned\n");
    expect(groupAlive(pid)).toBe(false);
  });

  it("SIGKILL after the grace for what ignores SIGTERM; a task's cleanup ends what left its group", async () => {
    const m = machine();
    const { reg } = await sandboxed(m, { graceMs: 300 });
    const stubborn = await reg.start("trap '' TERM; sleep 30 & echo up; wait", {
      cwd: m.project,
      taskId: "t1",
    });
    const escaped = await reg.start("setsid sleep 31 & echo up; wait", { cwd: m.project, taskId: "t1" });
    await waitUntil(
      async () => (await reg.poll(stubborn.id, "w")).stdout.includes("up"),
      10_000,
      "the stubborn command",
    );
    await waitUntil(
      async () => (await reg.poll(escaped.id, "w")).stdout.includes("up"),
      10_000,
      "the escaping command",
    );
    const started = Date.now();
    expect((await reg.cleanupTask("t1")).sort()).toEqual([stubborn.id, escaped.id].sort());
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(groupAlive(stubborn.pid)).toBe(false);
    expect(groupAlive(escaped.pid)).toBe(false);
    expect(reg.liveCount()).toBe(0);
  });
});

describe("choosing the sandbox (tools.exec.sandbox)", () => {
  const input = { profile: { home: "/nonexistent/.tenax", dir: "/nonexistent/.tenax" }, roots: [], env: {} };
  const missing = async () => ({
    ok: false as const,
    problem: "bubblewrap (bwrap) is not installed or not on PATH",
  });

  it("auto without bubblewrap runs commands on the machine and says why", async () => {
    const choice: SandboxChoice = await chooseSandbox("auto", input, missing);
    expect(choice.sandbox).toBeNull();
    expect(choice.detail).toContain("not installed");
    expect(choice.detail).toContain("apt-get install bubblewrap");
  });

  it("bwrap without bubblewrap refuses to start, naming the setting and the fix", async () => {
    const error = await chooseSandbox("bwrap", input, missing).catch((e: unknown) => e);
    expect(SandboxUnavailableError.isInstance(error)).toBe(true);
    expect((error as SandboxUnavailableError).message).toContain("tools.exec.sandbox is bwrap");
    expect((error as SandboxUnavailableError).hint).toContain("apt-get install bubblewrap");
  });

  it("none never looks for it", async () => {
    const choice = await chooseSandbox("none", input, () => {
      throw new Error("looked");
    });
    expect(choice).toMatchObject({ sandbox: null, mode: "none" });
  });
});
