// A private PostgreSQL cluster for one test file (postgres-cluster.ts), each test in a database of
// its own; stopped (immediately) and removed after the file's tests.
import { afterAll, beforeAll } from "vitest";
import { type PgCluster, removeCluster, startCluster } from "./postgres-cluster.js";

export { type ClusterOptions, type PgCluster, startCluster } from "./postgres-cluster.js";

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
