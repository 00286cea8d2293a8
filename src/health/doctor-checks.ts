// The doctor's checks of files and programs: config, permissions, the gateway pid file, the
// systemd user unit, the SQLite versions and git. Each returns one Check; fixes are safe ones.
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { LoadedConfig } from "../config/load.js";
import type { TenaxConfig } from "../config/schema.js";
import { commandLine, TenaxError } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { type Check, type DoctorDeps, messageOf } from "./doctor-check.js";

export function configCheck(
  paths: ProfilePaths,
  fix: boolean,
  load: () => LoadedConfig,
): { check: Check; config: TenaxConfig | null } {
  let loaded: LoadedConfig;
  try {
    loaded = load();
  } catch (error) {
    const check: Check = { name: "config", status: "fail", detail: messageOf(error) };
    if (TenaxError.isInstance(error) && error.hint) check.next = error.hint;
    return { check, config: null };
  }
  const source = loaded.source === "file" ? `${paths.config} loads` : `no ${paths.config}: defaults apply`;
  const warnings = configWarnings(paths, loaded);
  const open = [paths.env, paths.config].filter((f) => tooOpen(f) && warnings.some((w) => w.includes(f)));
  if (warnings.length === 0)
    return { check: { name: "config", status: "ok", detail: source }, config: loaded.config };
  const check: Check = { name: "config", status: "warn", detail: `${source}; ${warnings.join("; ")}` };
  if (open.length > 0) {
    check.fix = `chmod 600 ${open.join(" ")}`;
    check.next = tenaxCommand(paths.name, ["doctor", "--fix"]);
  }
  if (!fix || open.length === 0) return { check, config: loaded.config };
  try {
    for (const file of open) chmodSync(file, 0o600);
  } catch (error) {
    check.detail += `; chmod failed: ${messageOf(error)}`;
    return { check, config: loaded.config };
  }
  check.fixed = `made ${open.join(" and ")} readable by this user only (mode 600)`;
  const after = safeLoad(load);
  const rest = after === null ? [] : configWarnings(paths, after);
  check.status = rest.length === 0 ? "ok" : "warn";
  if (rest.length === 0) delete check.next;
  return { check, config: loaded.config };
}

/** The loader's warnings; .env holds secrets even when there is no config.yaml for it to check. */
function configWarnings(paths: ProfilePaths, loaded: LoadedConfig): string[] {
  if (loaded.source === "file" || !readableByOthers(paths.env)) return loaded.warnings;
  return [...loaded.warnings, `${paths.env} can be read by other users`];
}

function readableByOthers(file: string): boolean {
  try {
    return (statSync(file).mode & 0o044) !== 0;
  } catch {
    return false;
  }
}

function safeLoad(load: () => LoadedConfig): LoadedConfig | null {
  try {
    return load();
  } catch {
    return null;
  }
}

function tooOpen(file: string): boolean {
  try {
    return (statSync(file).mode & 0o077) !== 0;
  } catch {
    return false;
  }
}

export function permissionsCheck(paths: ProfilePaths): Check {
  const files = [paths.dir, ...["", "-wal", "-shm"].map((s) => `${paths.state}${s}`)].filter(existsSync);
  if (files.length === 0)
    return { name: "permissions", status: "ok", detail: `${paths.dir} does not exist yet` };
  const uid = process.getuid?.() ?? null;
  const blocked = files.filter((file) => {
    try {
      accessSync(file, constants.W_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (blocked.length === 0)
    return { name: "permissions", status: "ok", detail: `${files.join(", ")} writable by this user` };
  const owners = blocked.map((f) => `${f} (owner uid ${statSync(f).uid})`);
  return {
    name: "permissions",
    status: "fail",
    detail: `this user${uid === null ? "" : ` (uid ${uid})`} cannot write ${owners.join(", ")}`,
    next: commandLine(["ls", "-ln", paths.dir]),
  };
}

export function stalePidCheck(paths: ProfilePaths, fix: boolean, now: number): Check {
  if (!existsSync(paths.pid))
    return { name: "pid file", status: "ok", detail: "no gateway pid file (no gateway running)" };
  const gateway = readGatewayPid(paths.pid);
  // A gateway creates the file and then writes its pid: a young empty file is one being written.
  if (gateway.pid === null && now - mtimeOf(paths.pid) < FRESH_PID_FILE_MS)
    return {
      name: "pid file",
      status: "ok",
      detail: `${paths.pid} is being written by a gateway starting up`,
    };
  if (gateway.running)
    return {
      name: "pid file",
      status: "ok",
      detail: `the gateway runs as pid ${gateway.pid} (${paths.pid})`,
    };
  const check: Check = {
    name: "pid file",
    status: "warn",
    detail:
      gateway.pid === null
        ? `${paths.pid} names no pid`
        : `${paths.pid} names pid ${gateway.pid}, which is not running (left by a gateway that died)`,
    fix: `remove ${paths.pid}`,
    next: tenaxCommand(paths.name, ["doctor", "--fix"]),
  };
  if (!fix) return check;
  try {
    unlinkSync(paths.pid);
  } catch (error) {
    check.detail += `; removing it failed: ${messageOf(error)}`;
    return check;
  }
  const { next: _done, ...rest } = check;
  return { ...rest, status: "ok", fixed: `removed ${paths.pid}` };
}

const FRESH_PID_FILE_MS = 10_000;

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** The unit `tenax gateway install` writes: tenax-gateway.service, tenax-gateway-NAME.service. */
export function serviceUnitCheck(paths: ProfilePaths, env: NodeJS.ProcessEnv): Check {
  const home = env.HOME ?? homedir();
  const dirs = [
    ...(env.XDG_CONFIG_HOME ? [join(env.XDG_CONFIG_HOME, "systemd", "user")] : []),
    join(home, ".config", "systemd", "user"),
  ];
  const found = [...new Set(dirs)].flatMap((dir) => {
    try {
      return readdirSync(dir)
        .filter((f) => f.startsWith("tenax-gateway") && f.endsWith(".service"))
        .map((f) => join(dir, f));
    } catch {
      return [];
    }
  });
  const expected = paths.name === "default" ? "tenax-gateway.service" : `tenax-gateway-${paths.name}.service`;
  const mine = found.filter((f) => f.endsWith(`/${expected}`));
  if (mine.length === 0) {
    const others = found.length > 0 ? ` (found ${found.join(", ")}, for other profiles)` : "";
    return {
      name: "service unit",
      status: "ok",
      detail: `no systemd user unit ${expected} installed${others}`,
    };
  }
  const problems: string[] = [];
  for (const unit of mine) {
    const exec = execStart(readFileSync(unit, "utf8"));
    if (exec === null) {
      problems.push(`${unit} has no ExecStart`);
      continue;
    }
    const [program, ...args] = exec;
    if (program === undefined || !isExecutable(program))
      problems.push(`${unit}: ExecStart runs ${program ?? "nothing"}, which is not an executable file`);
    const script = args.find((a) => a.endsWith("tenax.js"));
    if (script === undefined) problems.push(`${unit}: ExecStart does not run bin/tenax.js`);
    else if (!existsSync(script)) problems.push(`${unit}: ExecStart runs ${script}, which does not exist`);
  }
  if (problems.length === 0)
    return {
      name: "service unit",
      status: "ok",
      detail: `${mine.join(", ")}: ExecStart runs an existing node and bin/tenax.js`,
    };
  return {
    name: "service unit",
    status: "warn",
    detail: problems.join("; "),
    next: `write the unit again from this install: ${tenaxCommand(paths.name, ["gateway", "install"])}`,
  };
}

/** ExecStart's words (the last ExecStart= wins), without systemd's prefixes; null when none. */
export function execStart(unit: string): string[] | null {
  const lines = unit.split("\n").filter((l) => /^\s*ExecStart\s*=/.test(l));
  const last = lines.at(-1);
  if (last === undefined) return null;
  const value = last
    .slice(last.indexOf("=") + 1)
    .trim()
    .replace(/^[-@:+!]+/, "");
  const words = [...value.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)].map(
    (m) => m[1]?.replace(/\\(.)/g, "$1") ?? m[2] ?? m[3] ?? "",
  );
  return words.length > 0 ? words : null;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** SQLite 3.7.0 up to 3.51.2 can lose committed WAL frames when the WAL is reset; 3.51.3 fixed it. */
export function inWalResetBugBand(version: string): boolean {
  const parts = version.split(".").map((p) => Number.parseInt(p, 10));
  const [a = 0, b = 0, c = 0] = parts;
  const n = a * 1_000_000 + b * 1_000 + c;
  return n >= 3_007_000 && n < 3_051_003;
}

export function sqliteCheck(deps: DoctorDeps): Check {
  const db = new Database(":memory:");
  let bundled: string;
  try {
    bundled = String(db.prepare("select sqlite_version()").pluck().get());
  } finally {
    db.close();
  }
  if (inWalResetBugBand(bundled)) {
    return {
      name: "sqlite",
      status: "fail",
      detail: `better-sqlite3 bundles SQLite ${bundled}, in the WAL-reset bug band (3.7.0 to 3.51.2); Tenax stores use WAL`,
      next: "npm ci (Tenax's lock file pins a better-sqlite3 with SQLite 3.51.3 or newer)",
    };
  }
  const shell = deps.version("sqlite3")?.split(/\s+/)[0] ?? null;
  if (shell !== null && inWalResetBugBand(shell)) {
    return {
      name: "sqlite",
      status: "warn",
      detail: `Tenax's SQLite is ${bundled}; the system sqlite3 shell is ${shell}, in the WAL-reset bug band (3.7.0 to 3.51.2): do not open a live state.db with it`,
      next: "on a live store use Tenax's own commands (tenax sessions ..., tenax status), not the sqlite3 shell",
    };
  }
  return {
    name: "sqlite",
    status: "ok",
    detail: `Tenax's SQLite is ${bundled}${shell === null ? "" : `; the sqlite3 shell is ${shell}`}`,
  };
}

export function gitCheck(config: TenaxConfig | null, deps: DoctorDeps): Check {
  const version = deps.version("git");
  if (version !== null) return { name: "git", status: "ok", detail: version.trim() };
  const needed = config?.checkpoints.enabled === true;
  return {
    name: "git",
    status: needed ? "fail" : "warn",
    detail: `git is not on PATH; checkpoints need it${needed ? " and checkpoints.enabled is true" : " (they are off)"}`,
    next: "install git (Debian: apt-get install git)",
  };
}
