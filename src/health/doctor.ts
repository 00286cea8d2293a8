// `tenax doctor` as data: each check of a profile's installation (config, ports, permissions,
// store, stale files and turns, service unit, SQLite, git, policy, sandbox) with a status, one
// line for people, the next command when it is not ok, and what `--fix` would do or did. Only
// safe repairs.

import type { LoadedConfig } from "../config/load.js";
import type { ProfilePaths } from "../profile/paths.js";
import { engineOf } from "../store/registry.js";
import type { Check, CheckStatus, DoctorDeps } from "./doctor-check.js";
import {
  configCheck,
  gitCheck,
  permissionsCheck,
  serviceUnitCheck,
  sqliteCheck,
  stalePidCheck,
} from "./doctor-checks.js";
import { staleLocksCheck } from "./doctor-locks.js";
import { policyCheck } from "./doctor-policy.js";
import { portsCheck } from "./doctor-ports.js";
import { sandboxCheck } from "./doctor-sandbox.js";
import {
  postgresStoreCheck,
  searchIndexCheck,
  spoolCheck,
  staleSessionsCheck,
  storeIntegrityCheck,
} from "./doctor-store.js";

export type { Check, CheckStatus, DoctorDeps } from "./doctor-check.js";

export interface DoctorReport {
  profile: string;
  status: CheckStatus;
  fix: boolean;
  checks: Check[];
}

export interface DoctorInput {
  paths: ProfilePaths;
  fix: boolean;
  /** The loaded config, or the loader's error. */
  loadConfig(): LoadedConfig;
  deps: DoctorDeps;
}

export async function runDoctor(input: DoctorInput): Promise<DoctorReport> {
  const { paths, fix, deps } = input;
  const config = configCheck(paths, fix, input.loadConfig);
  const checks: Check[] = [config.check];
  checks.push(await portsCheck(paths, config.config, deps));
  checks.push(permissionsCheck(paths));
  const onPostgres = config.config?.store.engine === "postgres";
  const integrity =
    onPostgres && config.config !== null
      ? await postgresStoreCheck(paths, config.config)
      : await storeIntegrityCheck(paths, config.config);
  checks.push(integrity);
  // The search index is SQLite's own file; PostgreSQL searches in the same table.
  if (!onPostgres) checks.push(searchIndexCheck(paths, integrity.status !== "fail"));
  const engine = config.config === null ? {} : engineOf(config.config.store);
  checks.push(spoolCheck(paths, engine));
  checks.push(stalePidCheck(paths, fix, deps.now()));
  checks.push(await staleLocksCheck(paths, fix, deps.now()));
  checks.push(await staleSessionsCheck(paths, fix, integrity.status !== "fail", deps, engine));
  checks.push(serviceUnitCheck(paths, deps.env));
  checks.push(sqliteCheck(deps));
  checks.push(gitCheck(config.config, deps));
  checks.push(policyCheck(config.config));
  checks.push(await sandboxCheck(paths, config.config, deps.env));
  return { profile: paths.name, status: worstOf(checks), fix, checks };
}

export function worstOf(checks: readonly Check[]): CheckStatus {
  if (checks.some((c) => c.status === "fail")) return "fail";
  return checks.some((c) => c.status === "warn") ? "warn" : "ok";
}

/** Exit 0 when nothing fails (warnings included), 1 when something fails. */
export function doctorExitCode(report: DoctorReport): number {
  return report.status === "fail" ? 1 : 0;
}
