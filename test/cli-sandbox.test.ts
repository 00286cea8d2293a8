// tools.exec.sandbox through the real CLI: `tenax doctor` says where the agent's commands run
// (bubblewrap, which one, or on the machine and why), and `bwrap` without bubblewrap is an error
// at start, naming the setting and the fix, from the gateway and `tenax chat` alike. "Without
// bubblewrap" is a PATH that does not hold it: Tenax looks for `bwrap` on PATH only.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { whichBwrap } from "../src/agent/sandbox/sandbox.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { refusedGateway, simProfile } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

/** A PATH with nothing on it: no bwrap (nor git, which the doctor only warns about). */
const EMPTY_PATH = mkdtempSync(join(tmpdir(), "tenax-empty-path-"));

function sandboxOf(stdout: string) {
  const report = JSON.parse(stdout) as {
    checks: { name: string; status: string; detail: string; next?: string }[];
  };
  return report.checks.find((c) => c.name === "sandbox");
}

describe("tools.exec.sandbox", () => {
  it.skipIf(whichBwrap(process.env.PATH) === null)(
    "auto with bubblewrap installed: tenax doctor says commands run in it, and which",
    async () => {
      const { home } = await simProfile();
      const run = await tenaxAsync(home, ["doctor", "--json"]);
      expect(sandboxOf(run.stdout)).toEqual({
        name: "sandbox",
        status: "ok",
        detail: expect.stringMatching(
          /^commands run in a bubblewrap sandbox: bubblewrap [\d.]+ \(\/.*bwrap\)$/,
        ),
      });
    },
  );

  it("auto without bubblewrap: a warning that commands run on the machine, with the install command", async () => {
    const { home } = await simProfile();
    const run = await tenaxAsync(home, ["doctor", "--json"], { env: { PATH: EMPTY_PATH } });
    expect(run.status).toBe(0);
    expect(sandboxOf(run.stdout)).toEqual({
      name: "sandbox",
      status: "warn",
      detail: expect.stringContaining("not installed or not on PATH, so commands run without a sandbox"),
      next: expect.stringContaining("apt-get install bubblewrap"),
    });
  });

  it("bwrap without bubblewrap: the gateway and tenax chat refuse to start, naming the setting and the fix", async () => {
    const { home, sim } = await simProfile("", "tools: { exec: { sandbox: bwrap } }");
    const doctor = await tenaxAsync(home, ["doctor", "--json"], { env: { PATH: EMPTY_PATH } });
    expect(doctor.status).toBe(1);
    expect(sandboxOf(doctor.stdout)).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("tools.exec.sandbox is bwrap, but bubblewrap (bwrap) is not installed"),
    });
    const gateway = await refusedGateway(home, ["--port", "0"], { PATH: EMPTY_PATH });
    expect(gateway.status).toBe(1);
    expect(gateway.output).toContain("tools.exec.sandbox is bwrap, but bubblewrap (bwrap) is not installed");
    expect(gateway.output).toContain("apt-get install bubblewrap");
    expect(gateway.output).not.toMatch(/unexpected failure|at .*\.js:\d+/);
    const chat = await tenaxAsync(home, ["chat", "-q", "hello"], { env: { PATH: EMPTY_PATH } });
    expect(chat.status).toBe(1);
    expect(chat.stderr).toContain("tools.exec.sandbox is bwrap");
    expect(chat.stderr).toContain("tools.exec.sandbox: auto");
    // Refused before any turn: the model was never asked.
    expect(sim.requests()).toEqual([]);
  });
});
