// Installing and removing a profile's unit files: write them (never silently over a different
// one), then tell the user manager with daemon-reload and enable; the reverse to uninstall.
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { TenaxError } from "../../core/errors.js";
import { writeFileAtomic } from "../../profile/atomic-write.js";
import { type Systemctl, systemctlOk } from "./systemctl.js";

export interface UnitFile {
  unit: string;
  text: string;
}

export interface InstallPlan {
  directory: string;
  files: readonly UnitFile[];
  /** Units to enable after daemon-reload. */
  enable: readonly string[];
  /** Units to start after they are enabled. */
  start?: readonly string[];
  force: boolean;
  /** The command that forces it, for the hint. */
  forceCommand: string;
}

export type InstallOutcome = "created" | "unchanged" | "replaced";

export interface InstalledUnit {
  unit: string;
  path: string;
  outcome: InstallOutcome;
}

export async function installUnits(plan: InstallPlan, systemctl: Systemctl): Promise<InstalledUnit[]> {
  // Ask the user manager first, so a machine without one gets no stray file.
  await systemctlOk(systemctl, ["show", "-p", "Version"]);
  // Check every file before writing any, so a refusal leaves none of them half installed.
  const installed: InstalledUnit[] = [];
  for (const file of plan.files) {
    const path = join(plan.directory, file.unit);
    const existing = await readOptional(path);
    let outcome: InstallOutcome = "created";
    if (existing !== null) {
      if (existing === file.text) outcome = "unchanged";
      else if (!plan.force) {
        throw new TenaxError("unit_exists", `${path} already exists with different content`, {
          hint: `Look at it, then replace it with: ${plan.forceCommand}`,
          data: { path },
        });
      } else outcome = "replaced";
    }
    installed.push({ unit: file.unit, path, outcome });
  }
  for (const [i, file] of plan.files.entries()) {
    const target = installed[i];
    if (target === undefined || target.outcome === "unchanged") continue;
    await mkdir(plan.directory, { recursive: true });
    await writeFileAtomic(target.path, file.text, 0o644);
  }
  await systemctlOk(systemctl, ["daemon-reload"]);
  for (const unit of plan.enable) await systemctlOk(systemctl, ["enable", unit]);
  for (const unit of plan.start ?? []) await systemctlOk(systemctl, ["start", unit]);
  return installed;
}

export interface RemovedUnit {
  unit: string;
  path: string;
  removed: boolean;
}

/** Stop and disable each unit in order, remove the files, then one daemon-reload. */
export async function uninstallUnits(
  units: readonly string[],
  directory: string,
  systemctl: Systemctl,
): Promise<RemovedUnit[]> {
  const removed: RemovedUnit[] = [];
  for (const unit of units) {
    // stop and disable may fail for a unit that was never loaded; removing the file is what counts.
    await systemctl(["stop", unit]);
    await systemctl(["disable", unit]);
  }
  for (const unit of units) {
    const path = join(directory, unit);
    const present = (await readOptional(path)) !== null;
    await rm(path, { force: true });
    removed.push({ unit, path, removed: present });
  }
  await systemctlOk(systemctl, ["daemon-reload"]);
  return removed;
}

/** Whether a unit file is there, without reading systemd's view of it. */
export async function unitFileExists(directory: string, unit: string): Promise<boolean> {
  return (await readOptional(join(directory, unit))) !== null;
}

async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
