// Installing and removing a profile's gateway unit: write the file (never silently over a different
// one), then tell the user manager with daemon-reload and enable; the reverse to uninstall.
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { TenaxError } from "../../core/errors.js";
import { writeFileAtomic } from "../../profile/atomic-write.js";
import { type Systemctl, systemctlOk } from "./systemctl.js";

export interface InstallPlan {
  unit: string;
  directory: string;
  text: string;
  force: boolean;
  /** The command that forces it, for the hint. */
  forceCommand: string;
}

export type InstallOutcome = "created" | "unchanged" | "replaced";

export async function installUnit(
  plan: InstallPlan,
  systemctl: Systemctl,
): Promise<{ path: string; outcome: InstallOutcome }> {
  // Ask the user manager first, so a machine without one gets no stray file.
  await systemctlOk(systemctl, ["show", "-p", "Version"]);
  const path = join(plan.directory, plan.unit);
  const existing = await readOptional(path);
  let outcome: InstallOutcome = "created";
  if (existing !== null) {
    if (existing === plan.text) outcome = "unchanged";
    else if (!plan.force) {
      throw new TenaxError("unit_exists", `${path} already exists with different content`, {
        hint: `Look at it, then replace it with: ${plan.forceCommand}`,
        data: { path },
      });
    } else outcome = "replaced";
  }
  if (outcome !== "unchanged") {
    await mkdir(plan.directory, { recursive: true });
    await writeFileAtomic(path, plan.text, 0o644);
  }
  await systemctlOk(systemctl, ["daemon-reload"]);
  await systemctlOk(systemctl, ["enable", plan.unit]);
  return { path, outcome };
}

export async function uninstallUnit(
  unit: string,
  directory: string,
  systemctl: Systemctl,
): Promise<{ path: string; removed: boolean }> {
  const path = join(directory, unit);
  // stop and disable may fail for a unit that was never loaded; removing the file is what counts.
  await systemctl(["stop", unit]);
  await systemctl(["disable", unit]);
  const removed = (await readOptional(path)) !== null;
  await rm(path, { force: true });
  await systemctlOk(systemctl, ["daemon-reload"]);
  return { path, removed };
}

async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
