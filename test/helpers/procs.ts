// Real processes a test expects Tenax to end: found through /proc by their exact command line (a
// sleep with a duration no other test uses) and, when given, the profile in their mark, so a test
// never touches another test's processes. Whatever a test watched is killed after it, whatever
// Tenax did.
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { afterEach } from "vitest";
import { readStat } from "../../src/agent/process-group.js";
import { isRunning, type ProcessIdentity } from "../../src/agent/process-identity.js";
import { PROFILE_VAR } from "../../src/agent/process-marks.js";

/** The profile as the marks name it. */
export const markOf = (dir: string) => realpathSync(dir);

/** Live processes whose argv is exactly `argv`, marked with `profile` when it is given. */
export function processesOf(argv: string[], profile?: string): ProcessIdentity[] {
  const wanted = `${argv.join("\0")}\0`;
  const found: ProcessIdentity[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "latin1") !== wanted) continue;
      if (profile !== undefined) {
        const environ = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
        if (!environ.includes(`${PROFILE_VAR}=${profile}`)) continue;
      }
      const stat = readStat(entry);
      if (stat === null || stat.state === "Z") continue;
      found.push({ pid: Number(entry), start: stat.start });
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return found;
}

/** The one process with this argv (and mark); fails when there is none or several. */
export function theProcess(argv: string[], profile?: string): ProcessIdentity {
  const found = processesOf(argv, profile);
  if (found.length !== 1) throw new Error(`expected one process "${argv.join(" ")}", found ${found.length}`);
  return found[0] as ProcessIdentity;
}

export const running = isRunning;

const watched: Array<{ argv: string[]; profile: string | undefined }> = [];

/** Kill what matches after the test, should it still run. */
export function watch(argv: string[], profile?: string): void {
  watched.push({ argv, profile });
}

afterEach(() => {
  for (const { argv, profile } of watched.splice(0)) {
    for (const p of processesOf(argv, profile)) {
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
});
