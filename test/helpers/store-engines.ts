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

/**
 * The SQLite Store seen through the port: its reads are still synchronous on this branch, so each
 * is wrapped in a promise here. Remove once Store implements StorePort (issue 26, item 1).
 */
function sqlitePort(store: Store): StorePort {
  const r =
    <A extends unknown[], T>(fn: (...args: A) => T) =>
    (...args: A) =>
      Promise.resolve(fn(...args));
  return {
    engine: "sqlite",
    where: store.location.path,
    getSession: r((id: string) => store.getSession(id)),
    listSessions: r((options?: Parameters<Store["listSessions"]>[0]) => store.listSessions(options)),
    resolveSessionId: (id) => new Promise((resolve) => resolve(store.resolveSessionId(id))),
    getMessages: r((id: string) => store.getMessages(id)),
    getTurns: r((id: string) => store.getTurns(id)),
    runningTurns: r(() => store.runningTurns()),
    interruptedTurnsOf: r((owner: string, since: number) => store.interruptedTurnsOf(owner, since)),
    findConversation: r((hash: string) => store.findConversation(hash)),
    conversationHash: r((id: string) => store.conversationHash(id)),
    getRecord: <T>(kind: string, key: string) => Promise.resolve(store.getRecord<T>(kind, key)),
    getRecordText: r((kind: string, key: string) => store.getRecordText(kind, key)),
    listRecords: <T>(kind: string, options?: { sessionId?: string }) =>
      Promise.resolve(store.listRecords<T>(kind, options)),
    recordStamp: r((kind: string) => store.recordStamp(kind)),
    recordVersions: r((kind: string) => store.recordVersions(kind)),
    getResponse: r((id: string) => store.getResponse(id)),
    responseWithItem: r((id: string) => store.responseWithItem(id)),
    latestResponseId: r((id: string) => store.latestResponseId(id)),
    credentialStates: r(() => store.credentialStates()),
    search: (query, options) => new Promise((resolve) => resolve(store.search(query, options))),
    stats: r(() => store.stats()),
    write: (ops, options) => store.write(ops, options),
    writeStaged: (ops, options) => store.writeStaged(ops, options),
    createSession: (input) => store.createSession(input),
    sessionOp: (input) => store.sessionOp(input),
    messageOp: (input) => store.messageOp(input),
    appendMessage: (input) => store.appendMessage(input),
    appendMessages: (inputs) => store.appendMessages(inputs),
    putRecord: (kind, key, value, options) => store.putRecord(kind, key, value, options),
    startTurn: (...args) => store.startTurn(...args),
    beginTurn: (...args) => store.beginTurn(...args),
    updateTurn: (op) => store.updateTurn(op),
    putResponse: (row) => store.putResponse(row),
    deleteResponse: (id) => store.deleteResponse(id),
    deleteSession: (id) => store.deleteSession(id),
    pruneSessions: (cutoff, dryRun) => store.pruneSessions(cutoff, dryRun),
    replay: (records) => store.replay(records),
    credentials: () => store.credentials(),
    on: (listener) => store.on(listener),
    health: () => store.health(),
    close: () => store.close(),
  };
}

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
    return { store: sqlitePort(store), spoolDir: paths.spool };
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
