// The store component as the writer itself sees it, merged into the layer check's: what only this
// process knows (a write that failed, damage it met, writes it spooled, a database it cannot reach)
// and the page check's verdict on SQLite.
import type { ProfilePaths } from "../profile/paths.js";
import type { IntegrityResult } from "../store/integrity.js";
import { recoverCommand } from "../store/open-database.js";
import type { StoreHealth } from "../store/store-types.js";
import type { VerifierHealth } from "../store/verifier.js";
import type { HealthComponent } from "./monitor.js";
import { worst } from "./status.js";

/** The writer's own view of the store: a write that failed, a corruption seen, writes spooled. */
export function mergeLiveStore(component: HealthComponent, live: StoreHealth): HealthComponent {
  const extra = {
    writable: live.writable,
    spooled_records: live.spooled_records,
    search: live.search.status,
    integrity: live.integrity?.status ?? null,
  };
  if (live.corrupt)
    return {
      ...component,
      ...extra,
      status: "down",
      detail: `corrupt since ${new Date(live.corrupt.since).toISOString()}: ${live.corrupt.detail}; new writes are spooled (${live.spooled_records})`,
      next: live.corrupt.recover,
    };
  if (live.unavailable)
    return {
      ...component,
      ...extra,
      status: "down",
      detail: `the PostgreSQL database ${live.path} cannot be reached since ${new Date(live.unavailable.since).toISOString()}: ${live.unavailable.detail}; turns are refused with 503 store_unavailable and refused writes are spooled (${live.spooled_records})`,
      next: `start PostgreSQL at ${live.path} (or fix the network to it); Tenax takes writes again by itself once it answers, no restart needed${live.spooled_records > 0 ? "; then fold the refused writes in with tenax store replay" : ""}`,
    };
  if (live.disk_failure)
    return {
      ...component,
      ...extra,
      status: "down",
      detail: `the disk failed a sync at ${new Date(live.disk_failure.since).toISOString()}: ${live.disk_failure.detail}; new writes are spooled (${live.spooled_records})`,
      next: "check the disk (dmesg, df -h), then restart Tenax",
    };
  const problems: string[] = [];
  if (!live.writable) problems.push("not writable: new writes are spooled to disk");
  // On PostgreSQL the layer check counts what waits (less what `tenax store replay` has folded in).
  if (live.spooled_records > 0 && live.engine === "sqlite")
    problems.push(`${live.spooled_records} writes wait in the spool`);
  if (live.search.status !== "ok")
    problems.push(`search ${live.search.status}${live.search.detail ? ` (${live.search.detail})` : ""}`);
  if (problems.length === 0) return { ...component, ...extra };
  return {
    ...component,
    ...extra,
    status: worst([component.status, "degraded"]),
    detail: `${problems.join("; ")}; ${component.detail}`,
  };
}

/**
 * The last page check (the continuous verifier's, or the one run as the store opened): damage found
 * makes the store down, with the salvage command.
 */
export function withIntegrity(
  component: HealthComponent,
  result: IntegrityResult | null,
  verifier: VerifierHealth,
  paths: ProfilePaths,
): HealthComponent {
  const extra = {
    integrity: result?.status ?? null,
    integrity_checked_at: result?.checked_at ?? null,
    // The last whole pass over state.db and search.db, and when the next slice runs.
    verified_at: verifier.last_pass?.ended_at ?? null,
    verify_next_at: verifier.next_at,
  };
  if (result?.status !== "corrupt") return { ...component, ...extra };
  return {
    ...component,
    ...extra,
    status: "down",
    detail: `SQLite's page check found damage (${result.detail.slice(0, 3).join("; ")}); ${component.detail}`,
    next: recoverCommand(paths.state, paths.name),
  };
}
