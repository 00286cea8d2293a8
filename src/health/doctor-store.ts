// The doctor's store checks: SQLite's quick check on a read-only connection (bounded in time),
// writes waiting in the spool, and turns left running by a process that died. The writer is
// opened only to reap those turns, and only when no gateway holds the profile.
import { existsSync } from "node:fs";
import { reapDeadTurns } from "../agent/reap.js";
import type { TenaxConfig } from "../config/schema.js";
import { TenaxError } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { checkIntegrity } from "../store/integrity.js";
import { recoverCommand } from "../store/open-database.js";
import {
  type EngineSettings,
  engineOf,
  openProfileReader,
  openReader,
  type ProfileReader,
} from "../store/registry.js";
import { type Check, type DoctorDeps, messageOf } from "./doctor-check.js";
import { salvageHint, spooledWrites } from "./store-component.js";

/** The doctor waits at least this long for the quick check (the store's own open budget may be 0). */
const MIN_CHECK_MS = 10_000;

export async function storeIntegrityCheck(paths: ProfilePaths, config: TenaxConfig | null): Promise<Check> {
  const name = "store integrity";
  if (!existsSync(paths.state))
    return { name, status: "ok", detail: `no store yet; ${paths.state} is created on first use` };
  // The reader checks the file is this profile's Tenax store before SQLite's page check.
  try {
    openReader(paths).close();
  } catch (error) {
    return {
      name,
      status: "fail",
      detail: `${paths.state} cannot be opened: ${messageOf(error)}`,
      next: TenaxError.isInstance(error) && error.hint ? error.hint : recoverCommand(paths.state, paths.name),
    };
  }
  const timeoutMs = Math.max(MIN_CHECK_MS, config?.store.integrity_check_timeout_ms ?? 0);
  const result = await checkIntegrity(paths.state, { mode: "quick", timeoutMs });
  if (result.status === "ok")
    return { name, status: "ok", detail: `${paths.state}: quick check ok in ${result.duration_ms} ms` };
  if (result.status === "unknown") {
    return {
      name,
      status: "warn",
      detail: `${paths.state}: the quick check did not finish (${result.detail.join("; ")})`,
      next: tenaxCommand(paths.name, ["sessions", "check"]),
    };
  }
  return {
    name,
    status: "fail",
    detail: `${paths.state} is damaged: ${result.detail.slice(0, 3).join("; ")}`,
    next: recoverCommand(paths.state, paths.name),
  };
}

/**
 * A profile on PostgreSQL: the database reachable, of a schema this Tenax knows, this profile's,
 * and how long a look at it takes (a slow answer is every turn's latency).
 */
export async function postgresStoreCheck(paths: ProfilePaths, config: TenaxConfig): Promise<Check> {
  const name = "store (PostgreSQL)";
  const started = Date.now();
  let reader: ProfileReader | null = null;
  try {
    reader = await openProfileReader(paths, engineOf(config.store));
    const stats = await reader?.stats();
    const ms = Date.now() - started;
    return {
      name,
      status: ms > SLOW_DATABASE_MS ? "warn" : "ok",
      detail: `${reader?.where}: schema ${stats?.schema_version}, ${stats?.sessions} sessions, opened and read in ${ms} ms${ms > SLOW_DATABASE_MS ? " (slow: every turn waits on it)" : ""}`,
    };
  } catch (error) {
    return {
      name,
      status: "fail",
      detail: `the PostgreSQL store cannot be used: ${messageOf(error)}`,
      next:
        TenaxError.isInstance(error) && error.hint ? error.hint : "check store.url and that PostgreSQL runs",
    };
  } finally {
    reader?.close();
  }
}

/** Opening a pool and one read slower than this is worth a warning. */
const SLOW_DATABASE_MS = 1000;

/**
 * The full-text index is derived from state.db and never its problem: one that cannot be opened
 * is a warning of its own, with the command that rebuilds it, never blamed on the store.
 */
export function searchIndexCheck(paths: ProfilePaths, storeReadable: boolean): Check {
  const name = "search index";
  if (!existsSync(paths.state)) return { name, status: "ok", detail: "no store yet" };
  if (!storeReadable) return { name, status: "warn", detail: "not checked: the store cannot be read" };
  let problem: string | null;
  try {
    const reader = openReader(paths);
    problem = reader.searchUnavailable();
    reader.close();
  } catch (error) {
    return { name, status: "warn", detail: `not checked: ${messageOf(error)}` };
  }
  if (problem === null) return { name, status: "ok", detail: `${paths.search} opens` };
  return { name, status: "warn", detail: problem, next: tenaxCommand(paths.name, ["sessions", "reindex"]) };
}

export function spoolCheck(paths: ProfilePaths, engine: EngineSettings = {}): Check {
  let records: number;
  try {
    records = spooledWrites(paths, engine);
  } catch (error) {
    return { name: "spool", status: "warn", detail: `${paths.spool} cannot be read: ${messageOf(error)}` };
  }
  if (records === 0) return { name: "spool", status: "ok", detail: "no writes waiting in the spool" };
  return {
    name: "spool",
    status: "warn",
    detail: `${records} write${records === 1 ? "" : "s"} wait in ${paths.spool} (the store could not take them)`,
    next: salvageHint(paths, engine),
  };
}

export async function staleSessionsCheck(
  paths: ProfilePaths,
  fix: boolean,
  storeReadable: boolean,
  deps: Pick<DoctorDeps, "withWriter" | "now">,
  engine: EngineSettings = {},
): Promise<Check> {
  const name = "stale sessions";
  if (!storeReadable) return { name, status: "warn", detail: "not checked: the store cannot be read" };
  const now = deps.now();
  let stale: { id: string; session_id: string }[];
  try {
    const reader = await openProfileReader(paths, engine);
    if (reader === null) return { name, status: "ok", detail: "no store yet" };
    try {
      stale = (await reader.runningTurns())
        .filter((t) => t.lease_expires_at !== null && t.lease_expires_at <= now)
        .map((t) => ({ id: t.id, session_id: t.session_id }));
    } finally {
      reader.close();
    }
  } catch (error) {
    return { name, status: "warn", detail: `not checked: ${messageOf(error)}` };
  }
  if (stale.length === 0) return { name, status: "ok", detail: "no running turn has outlived its lease" };
  const sessions = [...new Set(stale.map((t) => t.session_id))];
  const gateway = readGatewayPid(paths.pid);
  const check: Check = {
    name,
    status: "warn",
    detail: `${stale.length} turn${stale.length === 1 ? "" : "s"} still marked running after the lease expired (the process died), in session${sessions.length === 1 ? "" : "s"} ${sessions.join(", ")}`,
  };
  if (gateway.running) {
    check.detail += `; the gateway (pid ${gateway.pid}) interrupts them itself`;
    return check;
  }
  check.fix = "mark them interrupted (their transcripts are kept)";
  check.next = tenaxCommand(paths.name, ["doctor", "--fix"]);
  if (!fix) return check;
  try {
    const reaped = await deps.withWriter((store) => reapDeadTurns(store, now));
    const { next: _done, ...rest } = check;
    return {
      ...rest,
      status: "ok",
      fixed: `marked ${reaped.length} turn${reaped.length === 1 ? "" : "s"} interrupted: ${reaped.map((t) => t.turn_id).join(", ")}`,
    };
  } catch (error) {
    check.detail += `; marking them interrupted failed: ${messageOf(error)}`;
    return check;
  }
}
