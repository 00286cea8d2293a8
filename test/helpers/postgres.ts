// A private PostgreSQL cluster for one test file (postgres-cluster.ts), each test in a database of
// its own; stopped (immediately) and removed after the file's tests. Also an instance of the
// profile in a process of its own (fixtures/instance-holder.mjs), for the liveness tests, and plain
// sessions on a test's database; both closed after the test (opened.ts).
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import type { Opened } from "./opened.js";
import { type PgCluster, removeCluster, startCluster } from "./postgres-cluster.js";
import { tempDir } from "./tmp.js";

export { type ClusterOptions, type PgCluster, startCluster } from "./postgres-cluster.js";

const HOLDER = new URL("../fixtures/instance-holder.mjs", import.meta.url).pathname;

/** A cluster for this test file: started before its tests, stopped and removed after them. */
export function usePostgresCluster(): () => PgCluster {
  let cluster: PgCluster | null = null;
  beforeAll(async () => {
    cluster = await startCluster();
  });
  afterAll(async () => {
    if (cluster !== null) await removeCluster(cluster);
  });
  return () => {
    if (cluster === null) throw new Error("the PostgreSQL cluster is not started (use it inside a test)");
    return cluster;
  };
}

/** A plain session on the database at `url` (ended after the test; a server that ends it is ignored). */
export async function pgClient(opened: Opened, url: string, applicationName?: string): Promise<pg.Client> {
  const client = opened.add(
    new pg.Client({
      connectionString: url,
      ...(applicationName === undefined ? {} : { application_name: applicationName }),
    }),
    (c) => c.end().catch(() => undefined),
  );
  client.on("error", () => undefined);
  await client.connect();
  return client;
}

/**
 * An instance registered on the database at `url` in a child process (a real node running the
 * compiled registry, killed after the test); resolves with its tag once it is registered.
 */
export async function instanceHolder(
  opened: Opened,
  url: string,
  heartbeatMs: number,
): Promise<{ child: ChildProcess; tag: string }> {
  const child = opened.child(
    spawn(process.execPath, [HOLDER, url, tempDir(), String(heartbeatMs)], {
      stdio: ["ignore", "pipe", "inherit"],
    }),
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const tag = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the child instance did not start in 20 s")), 20_000);
    lines.on("line", (line) => {
      const match = /^ready (inst:\S+)$/.exec(line);
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      resolve(match[1]);
    });
    child.once("exit", (code) =>
      reject(new Error(`the child instance exited (${code}) before it was ready`)),
    );
  });
  return { child, tag };
}
