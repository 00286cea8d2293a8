// The store engines the contract suite (test/store-contract.test.ts) runs against, each opened
// fresh for a test: SQLite (the Store in a temp profile) and PostgreSQL (a new database of the
// file's private cluster, helpers/postgres.ts). Every handle opened is closed after the test.
import { afterEach } from "vitest";
import type { Deps } from "../../src/core/deps.js";
import type { Redactor } from "../../src/core/redact.js";
import type { StorePort } from "../../src/store/port.js";
import { openPostgresStore } from "../../src/store/postgres/open-postgres.js";
import type { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { storeOptions } from "../../src/store/registry.js";
import { Store } from "../../src/store/store.js";
import type { PgCluster } from "./postgres.js";
import { tempDir, tempProfile } from "./tmp.js";

export interface EngineHandle {
  store: StorePort;
  spoolDir: string;
}

export interface Engine {
  name: "sqlite" | "postgres";
  open(options?: { deps?: Partial<Deps>; redactor?: Redactor }): Promise<EngineHandle>;
}

const open: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

export const sqliteEngine: Engine = {
  name: "sqlite",
  async open(options = {}) {
    const paths = tempProfile();
    const store = await Store.open({
      ...storeOptions(paths),
      integrityCheckTimeoutMs: 0,
      deps: options.deps,
      redactor: options.redactor,
    });
    open.push(async () => store.close());
    return { store, spoolDir: paths.spool };
  },
};

/** Open a PostgreSQL store on `url`, closed after the test. */
export async function openPostgresAt(
  url: string,
  options: {
    profile?: string;
    spoolDir?: string;
    deps?: Partial<Deps>;
    redactor?: Redactor;
    poolMax?: number;
    connectTimeoutMs?: number;
  } = {},
): Promise<{ store: PostgresStore; spoolDir: string }> {
  const spoolDir = options.spoolDir ?? `${tempDir()}/spool`;
  const store = await openPostgresStore({
    url,
    profile: options.profile ?? "default",
    spoolDir,
    deps: options.deps,
    redactor: options.redactor,
    poolMax: options.poolMax,
    connectTimeoutMs: options.connectTimeoutMs ?? 2_000,
    pingEveryMs: 200,
  });
  open.push(() => store.shutdown());
  return { store, spoolDir };
}

export function postgresEngine(cluster: () => PgCluster): Engine {
  return {
    name: "postgres",
    async open(options = {}) {
      return openPostgresAt(await cluster().createDatabase(), options);
    },
  };
}
