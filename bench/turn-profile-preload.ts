// Preloaded (node --import) into the Tenax gateway by the turn-profile suite only, so src/ stays as
// it ships. On SIGUSR2 it writes a mark (TENAX_TURN_PROFILE_DIR/mark-N.json: the monotonic time, the
// process's CPU and resource usage) that bounds the measured turns in the CPU profile and the strace
// log; with TENAX_TURN_PROFILE_COUNT=1 it also counts every SQLite statement the process runs, per
// database file, by wrapping better-sqlite3's Statement and Database methods, and the mark holds the
// counts so far. JSON.parse and JSON.stringify are called through a function of this file, so that a
// CPU profile, which charges a builtin's time to its JavaScript caller, shows them as functions of
// their own (jsonParse, jsonStringify). Worker threads are left alone: the turns run on the main thread.
import { renameSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { isMainThread } from "node:worker_threads";
import Database from "better-sqlite3";

/** What one database file's connections ran; the bench takes the difference of two marks. */
export interface FileCounts {
  /** Statement executions (run, get, all, iterate), BEGIN and COMMIT included, and exec() parts. */
  statements: number;
  /** By `method SQL` (whitespace collapsed, cut at 160 characters). */
  by_sql: Record<string, number>;
  /** Statements compiled: prepare() and pragma() (which prepares its PRAGMA on every call). */
  prepares: number;
  /** Transactions that ended in a COMMIT after a write, and those that wrote nothing. */
  write_commits: number;
  read_commits: number;
  /** Writes run outside a transaction: each is a commit of its own. */
  autocommits: number;
  rollbacks: number;
  /** db.transaction(fn) calls: transaction functions made, not run. */
  transaction_functions: number;
}

export interface Mark {
  pid: number;
  mark: number;
  /** process.hrtime (CLOCK_MONOTONIC) in µs: the clock of V8's CPU profile timestamps. */
  hrtime_us: number;
  cpu_us: { user: number; system: number };
  resource: NodeJS.ResourceUsage;
  counting: boolean;
  files: Record<string, FileCounts>;
}

const dir = process.env.TENAX_TURN_PROFILE_DIR;
if (isMainThread && dir !== undefined && dir !== "") {
  const files: Record<string, FileCounts> = {};
  const counting = process.env.TENAX_TURN_PROFILE_COUNT === "1";
  if (counting) install(files);
  wrapJson();
  let marks = 0;
  process.on("SIGUSR2", () => {
    marks++;
    const mark: Mark = {
      pid: process.pid,
      mark: marks,
      hrtime_us: Number(process.hrtime.bigint() / 1000n),
      cpu_us: process.cpuUsage(),
      resource: process.resourceUsage(),
      counting,
      files,
    };
    const path = join(dir, `mark-${marks}.json`);
    writeFileSync(`${path}.tmp`, JSON.stringify(mark));
    renameSync(`${path}.tmp`, path);
  });
  writeFileSync(join(dir, "pid"), String(process.pid));
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

function wrapJson(): void {
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  JSON.parse = function jsonParse(...args: Parameters<typeof JSON.parse>) {
    return Reflect.apply(parse, JSON, args) as unknown;
  };
  JSON.stringify = function jsonStringify(...args: unknown[]) {
    return Reflect.apply(stringify, JSON, args) as string;
  } as typeof JSON.stringify;
}

/** Replace `name` on `proto` with `wrap(original)`. */
function patch(proto: object, name: string, wrap: (original: Method) => Method): void {
  const slots = proto as Record<string, unknown>;
  const original = slots[name];
  if (typeof original !== "function") throw new Error(`better-sqlite3 has no ${name} to count`);
  slots[name] = wrap(original as Method);
}

function install(files: Record<string, FileCounts>): void {
  /** Per connection: whether the open transaction has written. */
  const wrote = new WeakMap<Database.Database, boolean>();
  const countsOf = (db: Database.Database): FileCounts => {
    const key = `${basename(db.name)}${db.readonly ? " (read-only)" : ""}`;
    let c = files[key];
    if (c === undefined) {
      c = {
        statements: 0,
        by_sql: {},
        prepares: 0,
        write_commits: 0,
        read_commits: 0,
        autocommits: 0,
        rollbacks: 0,
        transaction_functions: 0,
      };
      files[key] = c;
    }
    return c;
  };
  const CONTROL = /^\s*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA)\b/i;
  const tally = (db: Database.Database, sql: string, method: string): string => {
    const c = countsOf(db);
    const text = sql.replace(/\s+/g, " ").trim().slice(0, 160);
    c.statements++;
    const key = `${method} ${text}`;
    c.by_sql[key] = (c.by_sql[key] ?? 0) + 1;
    return text;
  };
  /** One statement run: counted, and a transaction's end (or a write outside one) as a commit. */
  const note = (db: Database.Database, sql: string, method: string, before: boolean, readonly: boolean) => {
    const c = countsOf(db);
    const text = tally(db, sql, method);
    const after = db.inTransaction;
    const control = CONTROL.test(text);
    if (before && !after) {
      if (/^\s*ROLLBACK\b(?!\s+TO)/i.test(text)) c.rollbacks++;
      else if (wrote.get(db) === true) c.write_commits++;
      else c.read_commits++;
      wrote.set(db, false);
    } else if (!before && !after && !readonly && !control) {
      c.autocommits++;
    } else if (after && !readonly && !control) {
      wrote.set(db, true);
    }
  };

  const probe = new Database(":memory:");
  const statementProto = Object.getPrototypeOf(probe.prepare("SELECT 1")) as object;
  probe.close();
  for (const method of ["run", "get", "all", "iterate"]) {
    patch(
      statementProto,
      method,
      (original) =>
        function (this: unknown, ...args: unknown[]) {
          const stmt = this as Database.Statement;
          const before = stmt.database.inTransaction;
          try {
            return original.apply(this, args);
          } finally {
            note(stmt.database, stmt.source, method, before, stmt.readonly);
          }
        },
    );
  }
  const dbProto = Database.prototype as object;
  patch(
    dbProto,
    "exec",
    (original) =>
      function (this: unknown, ...args: unknown[]) {
        const db = this as Database.Database;
        const before = db.inTransaction;
        try {
          return original.apply(this, args);
        } finally {
          const sql = String(args[0]);
          // One count per statement of the script; a script's writes count as written.
          const parts = sql.split(";").filter((p) => p.trim() !== "");
          for (const part of parts.slice(0, -1)) tally(db, part, "exec");
          const last = parts.at(-1) ?? "";
          const writes = parts.some((p) => !/^\s*(BEGIN|COMMIT|END|ROLLBACK|SELECT|PRAGMA)\b/i.test(p));
          if (writes && db.inTransaction) wrote.set(db, true);
          note(db, last, "exec", before, !writes);
        }
      },
  );
  for (const method of ["prepare", "pragma"]) {
    patch(
      dbProto,
      method,
      (original) =>
        function (this: unknown, ...args: unknown[]) {
          countsOf(this as Database.Database).prepares++;
          return original.apply(this, args);
        },
    );
  }
  patch(
    dbProto,
    "transaction",
    (original) =>
      function (this: unknown, ...args: unknown[]) {
        countsOf(this as Database.Database).transaction_functions++;
        return original.apply(this, args);
      },
  );
}
