// What `tenax up` is doing, in `up.json` of the profile: the gateway child's state (starting,
// running, restarting in N s, gave up after a crash loop), its last exit and restart count, and
// the dashboard child's pid, and where each serves (the ports up was given, so that what the
// profile shows and probes is where up runs them). Written atomically by up on every change; read
// by the dashboard (its banner), `tenax status`, `tenax profile` and `tenax doctor`, which trust it
// only while up's own process (its pid with the start time recorded beside it, running this
// Tenax's `up`) is alive.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "./atomic-write.js";
import type { ProfilePaths } from "./paths.js";
import { isTenaxProcess } from "./tenax-process.js";

export const GATEWAY_SUPERVISION = ["starting", "running", "restarting", "gave_up", "stopping"] as const;
export type GatewaySupervision = (typeof GATEWAY_SUPERVISION)[number];

const pid = z.number().int().positive();
const time = z.number().int().nonnegative();
/** A pid's start time (/proc/PID/stat, clock ticks after boot), which tells a reused pid apart. */
const start = z.number().int().nonnegative().nullable();

const exitSchema = z.strictObject({
  code: z.number().int().nullable(),
  signal: z.string().nullable(),
  at: time,
  /** Exit 0 after a drain: not a crash. */
  clean: z.boolean(),
});
export type ChildExit = z.infer<typeof exitSchema>;

const upStateSchema = z.strictObject({
  /** The `tenax up` process. */
  pid,
  pid_start: start,
  /** The boot it runs in (/proc/sys/kernel/random/boot_id), null off Linux. */
  boot_id: z.string().nullable(),
  started_at: time,
  updated_at: time,
  gateway: z.strictObject({
    state: z.enum(GATEWAY_SUPERVISION),
    /** The gateway child now running (or starting), null between two of them. */
    pid: pid.nullable(),
    pid_start: start,
    /**
     * Where it serves: the --gateway-host and --gateway-port up was given (null: config.yaml's)
     * from the start, then the address it bound; every restart keeps the port (also when up was
     * given port 0).
     */
    host: z.string().nullable(),
    port: z.number().int().min(1).max(65_535).nullable(),
    /** How many times up started it again after an exit. */
    restarts: z.number().int().nonnegative(),
    next_restart_at: time.nullable(),
    last_exit: exitSchema.nullable(),
    /** Unclean exits within the crash-loop window, and the limit that makes up give up. */
    unclean_exits: z.number().int().nonnegative(),
    max_unclean_exits: z.number().int().positive(),
    window_ms: z.number().int().positive(),
    gave_up: z.strictObject({ reason: z.enum(["crash_loop", "config_error"]), at: time }).nullable(),
  }),
  dashboard: z.strictObject({
    pid: pid.nullable(),
    pid_start: start,
    /** Where it serves: up's --dashboard-host and --dashboard-port, then the address it bound. */
    host: z.string().nullable().optional(),
    port: z.number().int().min(1).max(65_535).nullable().optional(),
    /** Running once it listens (its dashboard.pid names it). */
    state: z.enum(["starting", "running", "stopped"]),
    last_exit: exitSchema.nullable(),
  }),
});
export type UpState = z.infer<typeof upStateSchema>;

export function upStateFile(paths: ProfilePaths): string {
  return join(paths.dir, "up.json");
}

/** The state of a `tenax up` that is still alive; null when none runs (no file, or its up is gone). */
export function readUpState(paths: ProfilePaths): UpState | null {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(upStateFile(paths), "utf8"));
  } catch {
    return null;
  }
  const parsed = upStateSchema.safeParse(raw);
  if (!parsed.success || !isUp(parsed.data)) return null;
  return parsed.data;
}

/**
 * Whether the file's up still runs: the same process (pid and start time, in this boot), running
 * this Tenax's `up`. A file left by a killed up whose pid was since given to another process is
 * never taken for a live one: a second `tenax up` sends that pid a signal. (The children's pids
 * need no such check: a live up reaps its children and writes their exit at once.)
 */
function isUp(state: UpState): boolean {
  return isTenaxProcess({ pid: state.pid, start: state.pid_start, boot_id: state.boot_id }, "up");
}

export function writeUpState(paths: ProfilePaths, state: UpState): Promise<void> {
  return writeFileAtomic(upStateFile(paths), `${JSON.stringify(state, null, 2)}\n`, 0o600);
}

/** "exited with code 1", "was killed by SIGKILL". */
export function describeExit(exit: { code: number | null; signal: string | null }): string {
  return exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

/** "5 min", "90 s": a window as people read it. */
export function formatWindow(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}
