// `tenax status` always answers, however the gateway fails to: against a gateway out of file
// descriptors (every connection it cannot accept is closed unanswered) it exited 13 with no output;
// against one that accepts and never answers it must give up at its deadline. Each time it prints
// the report (or the JSON document), names the gateway layer and exits 2 (down).
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

// A stand-in for the gateway: it listens and never answers; "starved" then takes every file
// descriptor its limit allows, so each connection it cannot accept is closed at once (libuv's way
// out of EMFILE), as a real gateway flooded with idle sockets did.
const STAND_IN = `
import { openSync } from "node:fs";
import { createServer } from "node:net";
const starved = process.argv[2] === "starved";
const server = createServer(() => {});
server.listen(0, "127.0.0.1", () => {
  let code = "none";
  if (starved) try { for (;;) openSync("/dev/null", "r"); } catch (error) { code = error.code; }
  process.stdout.write("listening " + server.address().port + " " + code + "\\n");
});
`;

/** The stand-in, written as this profile's running gateway (its pid file names it and its port). */
async function standIn(mode: "starved" | "silent") {
  const paths = profileWith("");
  const script = join(tempDir("tenax-stand-in-"), "gateway.mjs");
  writeFileSync(script, STAND_IN);
  const child = spawn("sh", ["-c", `ulimit -n 64 && exec "${process.execPath}" "${script}" ${mode}`]);
  children.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("\n")) resolve(out.trim());
    });
    child.once("exit", (code) => reject(new Error(`the stand-in exited (${code}): ${out}`)));
  });
  const [, port, code] = line.split(" ");
  if (mode === "starved") expect(code).toBe("EMFILE");
  writeFileSync(
    paths.pid,
    JSON.stringify({
      pid: child.pid,
      host: "127.0.0.1",
      port: Number(port),
      started_by: "run",
      args: ["gateway", "run"],
    }),
    { mode: 0o600 },
  );
  return { paths, url: `http://127.0.0.1:${port}`, pid: child.pid };
}

describe("tenax status against a gateway that cannot answer", () => {
  it("prints the report and exits 2 when the gateway is out of file descriptors, in text and as JSON", async () => {
    const { paths, url, pid } = await standIn("starved");
    const started = Date.now();
    const json = await tenaxAsync(paths.home, ["status", "--json"]);
    expect(json.stderr).not.toMatch(/unsettled|warning: detected/i);
    expect(json.status).toBe(2);
    const report = JSON.parse(json.stdout);
    expect(report.status).toBe("down");
    expect(report.components.gateway).toMatchObject({ status: "down", pid, url });
    expect(report.components.gateway.detail).toContain(
      `${url} does not answer (the connection was closed before any answer`,
    );
    expect(report.components.gateway.detail).toContain("a server out of file descriptors");
    expect(report.components.gateway.next).toMatch(/kill \d+|tenax gateway run/);
    expect(report.components.scheduler.status).toBe("down");

    const text = await tenaxAsync(paths.home, ["status"]);
    expect(text.status).toBe(2);
    expect(text.stdout).toMatch(/^Tenax profile 'default': down \(gateway down, scheduler down\)\n/);
    expect(text.stdout).toMatch(
      /gateway\s+down\s+process \d+ holds the gateway's pid file but does not answer/,
    );
    expect(text.stdout).toMatch(/^next \(gateway\): /m);
    // It did not wait out a deadline either: the closed connection is the answer.
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 40_000);

  it("gives up at its deadline on a gateway that accepts and never answers, and says so", async () => {
    const { paths, url } = await standIn("silent");
    const run = await tenaxAsync(paths.home, ["status", "--json"]);
    expect(run.status).toBe(2);
    const report = JSON.parse(run.stdout);
    expect(report.components.gateway.status).toBe("down");
    expect(report.components.gateway.detail).toContain(`${url} does not answer (no answer within 1500 ms)`);
  }, 40_000);
});
