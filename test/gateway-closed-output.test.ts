// The gateway never dies of its own output: with its stdout (as `tenax gateway run | head -1`
// leaves it) or both stdout and stderr closed before it writes a line, the real gateway process
// starts, serves, runs a turn, says in its log what happened, and on SIGTERM stops cleanly and
// removes its pid file.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BIN, cliEnvironment, ROOT, requireBuild } from "./helpers/cli.js";
import { simProfile } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

/** The port from the gateway's pid file once it listens; rejects if the process ends first. */
async function listeningPort(pidFile: string, child: ChildProcess, output: () => string): Promise<number> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the gateway exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    try {
      const port = (JSON.parse(readFileSync(pidFile, "utf8")) as { port?: number }).port;
      if (port !== undefined) return port;
    } catch {
      // Not written yet.
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the gateway did not listen within 15 s:\n${output()}`);
}

describe.each([["stdout"], ["stdout and stderr"]])("a gateway with its %s closed", (closed) => {
  it("keeps serving, logs why its output stopped, and stops cleanly on SIGTERM", async () => {
    const key = randomBytes(16).toString("hex");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: config.yaml's own ${VAR} reference
    const { paths, home } = await simProfile('api_key: "${TENAX_API_KEY}"');
    const child = spawn(process.execPath, [BIN, "gateway", "run", "--port", "0"], {
      cwd: ROOT,
      env: { ...cliEnvironment(home), TENAX_API_KEY: key },
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      // Our end of the pipe closes before the child has even started, so its first line hits EPIPE.
      child.stdout.destroy();
      let stderr = "";
      if (closed === "stdout") child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      else child.stderr.destroy();

      const port = await listeningPort(paths.pid, child, () => stderr);
      const url = `http://127.0.0.1:${port}`;
      expect((await fetch(`${url}/health/live`)).status).toBe(200);
      const reply = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "still there?" }] }),
      });
      expect(reply.status).toBe(200);
      const body = (await reply.json()) as { choices: Array<{ message: { content: string } }> };
      expect(body.choices[0]?.message.content).toBe("echo: still there?");

      const log = readFileSync(join(paths.logs, "gateway.log"), "utf8");
      expect(log).toMatch(/stdout was closed \(EPIPE\); the gateway keeps serving and its lines go on in /);
      expect(log).toMatch(/gateway listening on http:\/\/127\.0\.0\.1:/);
      if (closed === "stdout") expect(stderr).toMatch(/warning: stdout was closed \(EPIPE\)/);

      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(existsSync(paths.pid)).toBe(false);
      expect(existsSync(paths.cleanShutdown)).toBe(true);
      expect(readFileSync(join(paths.logs, "gateway.log"), "utf8")).toMatch(/gateway stopped cleanly/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });
});
