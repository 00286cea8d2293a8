// Checkpoint project locks (TENAX_HOME/checkpoints/store/projects/*/lock) left by a process that
// died. A live holder's lock is left alone; `--fix` removes only those whose pid is gone.
import { readdir, readFile, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { storeLayout } from "../checkpoints/layout.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { isProcessAlive } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { type Check, messageOf } from "./doctor-check.js";

/** An empty or unreadable lock file this old is abandoned (a live holder writes its pid at once). */
const EMPTY_LOCK_STALE_MS = 10 * 60_000;

export async function staleLocksCheck(paths: ProfilePaths, fix: boolean, now: number): Promise<Check> {
  const { projects } = storeLayout(paths.home);
  let ids: string[];
  try {
    ids = await readdir(projects);
  } catch {
    return { name: "lock files", status: "ok", detail: "no checkpoint store yet, so no lock files" };
  }
  const stale: string[] = [];
  let held = 0;
  for (const id of ids) {
    const file = join(projects, id, "lock");
    const state = await lockState(file, now);
    if (state === "stale") stale.push(file);
    if (state === "held") held++;
  }
  if (stale.length === 0) {
    return {
      name: "lock files",
      status: "ok",
      detail: held > 0 ? `${held} checkpoint lock(s) held by running processes` : "no stale checkpoint locks",
    };
  }
  const check: Check = {
    name: "lock files",
    status: "warn",
    detail: `${stale.length} checkpoint lock(s) left by processes that stopped: ${stale.join(", ")}`,
    fix: `remove ${stale.join(" ")}`,
    next: tenaxCommand(paths.name, ["doctor", "--fix"]),
  };
  if (!fix) return check;
  try {
    for (const file of stale) await unlink(file).catch(ignoreMissing);
  } catch (error) {
    check.detail += `; removing them failed: ${messageOf(error)}`;
    return check;
  }
  const { next: _done, ...rest } = check;
  return { ...rest, status: "ok", fixed: `removed ${stale.join(", ")}` };
}

async function lockState(file: string, now: number): Promise<"none" | "held" | "stale"> {
  let text: string;
  let mtime: number;
  try {
    [text, mtime] = await Promise.all([readFile(file, "utf8"), stat(file).then((s) => s.mtimeMs)]);
  } catch {
    return "none";
  }
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) return now - mtime > EMPTY_LOCK_STALE_MS ? "stale" : "held";
  return isProcessAlive(pid) ? "held" : "stale";
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
