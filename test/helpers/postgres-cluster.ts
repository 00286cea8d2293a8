// A private PostgreSQL cluster: initdb into a fresh folder, started on a free port of 127.0.0.1
// with its socket in that folder. Never a default port, never a shared server. Kept free of the
// test runner so the benchmarks (bench/) start the same cluster; the tests' per-file lifecycle is
// in postgres.ts. Debian's binaries under /usr/lib/postgresql/<version>/bin are used (.ci/run
// installs them).
import { execFile, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface PgCluster {
  readonly dir: string;
  readonly port: number;
  /** A URL of a database of this cluster (user tenax, no password: the cluster trusts local users). */
  url(database: string): string;
  /** A new empty database; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** pg_ctl stop -m fast: connections are told the server is shutting down. */
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  /** pg_ctl stop -m immediate: as a crash would. */
  kill(): Promise<void>;
}

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const version = versions[0];
  if (version === undefined) {
    throw new Error(
      `no PostgreSQL server binaries under ${root}/<version>/bin: install Debian's postgresql package (.ci/run does: apt-get install postgresql)`,
    );
  }
  return join(root, version, "bin");
}

/** As root, the binaries run as the postgres user (initdb refuses root); otherwise as ourselves. */
function runner(): {
  wrap(bin: string, args: string[]): [string, string[]];
  owner: { uid: number; gid: number } | null;
} {
  if (process.getuid?.() !== 0) return { wrap: (bin, args) => [bin, args], owner: null };
  let uid: number;
  let gid: number;
  try {
    uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  } catch {
    throw new Error(
      "no 'postgres' user to run PostgreSQL as: install Debian's postgresql package (.ci/run does)",
    );
  }
  return { wrap: (bin, args) => ["runuser", ["-u", "postgres", "--", bin, ...args]], owner: { uid, gid } };
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 60_000 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stderr}`));
      else resolve();
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A watcher outside this process stops the cluster (and removes its folder) once the process that
 * started it is gone: a test worker killed by a timeout or a signal never reaches afterAll, and a
 * bench stopped with Ctrl-C never reaches its cleanup; the server would otherwise keep running,
 * holding memory and a port.
 */
function reapWhenGone(pid: number, stop: [string, string[]], dir: string): void {
  const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;
  const stopCommand = [stop[0], ...stop[1]].map(quote).join(" ");
  const remove = process.env.TENAX_KEEP_TMP ? "true" : `rm -rf ${quote(dir)}`;
  const script = `while kill -0 ${pid} 2>/dev/null; do sleep 2; done; if [ -d ${quote(dir)} ]; then ${stopCommand} >/dev/null 2>&1; ${remove}; fi`;
  spawn("sh", ["-c", script], { detached: true, stdio: "ignore" }).unref();
}

let databases = 0;

export interface ClusterOptions {
  /**
   * Commits reach the disk before they are acknowledged (fsync and synchronous_commit on), as a
   * production server's do: for benchmarks set beside SQLite's synchronous=FULL. The tests'
   * default is off: nothing they check depends on surviving a power loss, and syncs only slow them.
   */
  durable?: boolean;
}

/** The server settings the cluster starts with, beyond its port and socket folder. */
function serverSettings(durable: boolean): string {
  const sync = durable ? "-c fsync=on -c synchronous_commit=on" : "-c fsync=off";
  return `-c listen_addresses=127.0.0.1 ${sync} -c deadlock_timeout=100ms`;
}

/** Initialise and start a cluster (about 1.5 s). */
export async function startCluster(options: ClusterOptions = {}): Promise<PgCluster> {
  const durable = options.durable ?? false;
  const bin = binDir();
  const { wrap, owner } = runner();
  const dir = mkdtempSync(join(tmpdir(), "tenax-pg-"));
  if (owner !== null) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  const log = join(dir, "log");
  const pgCtl = (...args: string[]) => run(...wrap(join(bin, "pg_ctl"), ["-D", data, ...args]));
  const initdbSync = durable ? [] : ["--no-sync"];
  await run(
    ...wrap(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "tenax", ...initdbSync, "-E", "UTF8"]),
  );
  let port = 0;
  const start = () =>
    pgCtl("-o", `-p ${port} -k ${dir} ${serverSettings(durable)}`, "-l", log, "-w", "start");
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (error) {
      const text = existsSync(log) ? readFileSync(log, "utf8") : "";
      // Another process took the port between our probe and the server's bind: try another.
      if (attempt >= 5 || !/could not bind|already in use/i.test(text)) throw error;
    }
  }
  reapWhenGone(
    process.pid,
    [...wrap(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"])],
    dir,
  );
  const url = (database: string) => `postgres://tenax@127.0.0.1:${port}/${database}`;
  return {
    dir,
    port,
    url,
    async createDatabase(name = `t${process.pid}_${++databases}`) {
      const client = new pg.Client({ connectionString: url("postgres") });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop: () => pgCtl("-m", "fast", "-w", "stop"),
    start,
    async restart() {
      await pgCtl("-m", "fast", "-w", "stop");
      await start();
    },
    kill: () => pgCtl("-m", "immediate", "-w", "stop"),
  };
}

export async function removeCluster(cluster: PgCluster): Promise<void> {
  await cluster.kill().catch(() => undefined);
  if (!process.env.TENAX_KEEP_TMP) rmSync(cluster.dir, { recursive: true, force: true, maxRetries: 5 });
}
