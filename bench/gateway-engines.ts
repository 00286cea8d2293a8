// The gateway bench on both store engines (issue 26): the same Tenax gateway with its profile in
// PostgreSQL (a private cluster, durable as SQLite's synchronous=FULL is), and, when asked for,
// a Tenax from a checkout before the store port on SQLite, so that one run sets the port's cost
// and PostgreSQL's beside today's figures under the same noise.
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { type PgCluster, removeCluster, startCluster } from "../test/helpers/postgres-cluster.js";

export interface BenchPostgres {
  cluster: PgCluster;
  /** The database the gateway's profile stores in. */
  url: string;
}

/** The first line of an error, short enough for a log line (initdb's stderr can run long). */
function reason(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split("\n")[0] ?? "").slice(0, 300);
}

/**
 * A durable private cluster (fsync and synchronous_commit on) and an empty database for the
 * gateway's profile; or, when no cluster can be started here (no PostgreSQL binaries, no postgres
 * user), why not, so the bench goes on without that target.
 */
export async function startBenchPostgres(): Promise<{ pg: BenchPostgres } | { skipped: string }> {
  let cluster: PgCluster;
  try {
    cluster = await startCluster({ durable: true });
  } catch (error) {
    return { skipped: `no PostgreSQL cluster could be started: ${reason(error)}` };
  }
  try {
    return { pg: { cluster, url: await cluster.createDatabase("tenax_bench") } };
  } catch (error) {
    await removeCluster(cluster);
    throw error;
  }
}

/** Stopped and its folder removed; the gateways on it must be stopped first. */
export function stopBenchPostgres(pg: BenchPostgres): Promise<void> {
  return removeCluster(pg.cluster);
}

/**
 * A note when PostgreSQL's data folder and the SQLite profiles are on different file systems: their
 * commits would then sync to different devices and the comparison would say little. Null when both
 * are on one.
 */
export function diskNote(pg: BenchPostgres, workDir: string): string | null {
  if (statSync(pg.cluster.dir).dev === statSync(workDir).dev) return null;
  return `PostgreSQL's data (${pg.cluster.dir}) and the SQLite profiles (${workDir}) are on different file systems: their syncs are not comparable`;
}

export interface BeforeCheckout {
  /** The checkout's CLI entry, run like the current one. */
  bin: string;
  commit: string;
}

/** The built CLI of the checkout BENCH_TENAX_BEFORE names; a clear error when it is not built. */
export function beforeCheckout(dir: string): BeforeCheckout {
  const root = resolve(dir);
  const bin = join(root, "bin", "tenax.js");
  if (!existsSync(bin) || !existsSync(join(root, "dist", "cli", "main.js"))) {
    throw new Error(
      `BENCH_TENAX_BEFORE=${dir}: no built Tenax CLI there (bin/tenax.js and dist/cli/main.js); run npm run build in that checkout`,
    );
  }
  return { bin, commit: commitOf(root) };
}

function commitOf(root: string): string {
  try {
    return execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}
