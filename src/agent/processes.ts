// The commands every task of this Tenax process runs: each a shell leading its own process group,
// owned by the task that started it, its output in bounded buffers. Each is marked in its
// environment with its task and this process (process-marks.ts) and recorded in the ledger while it
// runs (process-ledger.ts). When a task ends, its groups are killed, and so is every process carrying
// its mark (one that left the group with `setsid`), and nobody else's. Exit is observed through the
// child's own events: no timer per process.
import { type ChildProcess, spawn } from "node:child_process";
import { GATEWAY_KEY_VARIABLE } from "../config/gateway-key.js";
import type { ProfileSecrets } from "../config/profile-secrets.js";
import { type Clock, realSleep, type Sleep, systemClock } from "../core/deps.js";
import { Redactor } from "../core/redact.js";
import { childEnvironment } from "./child-env.js";
import { OutputBuffer } from "./output-buffer.js";
import { pipeOutput } from "./output-pipe.js";
import { DEFAULT_GRACE_MS, groupAlive, killGroup, readStat } from "./process-group.js";
import { killProcesses, type ProcessIdentity, selfIdentity } from "./process-identity.js";
import type { ProcessLedger } from "./process-ledger.js";
import { markEnv, type ScanFilter, scanMarked } from "./process-marks.js";

export interface ProcessRegistryOptions {
  /** Time a group has after SIGTERM before SIGKILL. */
  graceMs?: number;
  /** Kept per stream: the first bytes and a ring of the latest. */
  headBytes?: number;
  tailBytes?: number;
  /** At most this many bytes per stream in one poll. */
  pollBytes?: number;
  /** Finished processes kept for a last poll; past this the oldest are forgotten. */
  maxFinished?: number;
  clock?: Clock;
  sleep?: Sleep;
  /**
   * The profile's secrets: commands do not inherit them, and their output is kept with them
   * redacted. By default only TENAX_API_KEY is kept from commands.
   */
  secrets?: ProfileSecrets;
  /** The profile's folder, written in every command's mark. */
  profile?: string;
  /** Names of this process's variables commands inherit beyond the base list (tools.exec.env). */
  envAllow?: readonly string[];
  /** Where the commands that run are recorded durably (the agent's store). */
  ledger?: ProcessLedger;
}

export interface StartOptions {
  cwd: string;
  taskId: string;
  env?: Record<string, string>;
  /** A terminal call waiting for this command; it turns background if it leaves processes behind. */
  foreground?: boolean;
}

export interface ProcessInfo {
  id: string;
  task_id: string;
  command: string;
  cwd: string;
  pid: number;
  foreground: boolean;
  /** Running while any process of its group lives, even after the shell itself exited. */
  status: "running" | "exited";
  /** The shell's exit code and signal, null until it exited. */
  exit_code: number | null;
  signal: string | null;
  started_at: string;
  ended_at: string | null;
  output_bytes: { stdout: number; stderr: number };
}

export interface PollResult extends ProcessInfo {
  /** Output since this reader's last poll. */
  stdout: string;
  stderr: string;
  omitted_bytes?: { stdout: number; stderr: number };
}

export interface KillResult extends ProcessInfo {
  /** False when something of the group survived even SIGKILL. */
  killed: boolean;
}

interface Entry {
  id: string;
  taskId: string;
  command: string;
  cwd: string;
  pid: number;
  foreground: boolean;
  child: ChildProcess;
  startedAt: number;
  endedAt: number | null;
  exitCode: number | null;
  signal: string | null;
  stdout: OutputBuffer;
  stderr: OutputBuffer;
  /** Poll positions per reading task, so one task's poll never takes output from another's. */
  cursors: Map<string, { stdout: number; stderr: number }>;
  exited: Promise<void>;
  closed: Promise<void>;
}

/** A running command as its starter holds it: valid even after a cleanup forgot the process. */
export interface ProcessHandle {
  readonly id: string;
  info(): ProcessInfo;
  alive(): boolean;
  /** Resolves true when the shell exits, false if `signal` fires first. */
  waitForExit(signal: AbortSignal): Promise<boolean>;
  /** Waits up to `ms` for the output pipes to close after the shell exited; true if they did. */
  settle(ms: number): Promise<boolean>;
  /** All output from the start, head and tail when longer than maxBytes a stream. */
  output(maxBytes: number): {
    stdout: string;
    stderr: string;
    omitted_bytes: { stdout: number; stderr: number };
  };
  kill(): Promise<KillResult>;
  /** A foreground command that left processes behind: they stay, as a background process. */
  keepInBackground(): ProcessInfo;
  /** Drops the process from the registry once nothing of it is alive. */
  forget(): void;
}

function waitForExit(entry: Entry, signal: AbortSignal): Promise<boolean> {
  if (entry.endedAt !== null) return Promise.resolve(true);
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = () => resolve(false);
    signal.addEventListener("abort", onAbort, { once: true });
    void entry.exited.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    });
  });
}

export class ProcessRegistry {
  private readonly entries = new Map<string, Entry>();
  private nextId = 1;
  private readonly graceMs: number;
  private readonly headBytes: number;
  private readonly tailBytes: number;
  private readonly pollBytes: number;
  private readonly maxFinished: number;
  private readonly clock: Clock;
  private readonly sleep: Sleep;
  private readonly secrets: ProfileSecrets;
  private readonly profile: string;
  private readonly ledger: ProcessLedger | null;
  private readonly envAllow: readonly string[];
  /** This process as the owner in every mark; null where /proc is missing (nothing is marked). */
  private readonly owner: ProcessIdentity | null = selfIdentity();
  /** Tasks that started a command since their last cleanup: only their end needs a /proc scan. */
  private readonly launched = new Set<string>();

  constructor(options: ProcessRegistryOptions = {}) {
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.headBytes = options.headBytes ?? 16 * 1024;
    this.tailBytes = options.tailBytes ?? 256 * 1024;
    this.pollBytes = options.pollBytes ?? 16 * 1024;
    this.maxFinished = options.maxFinished ?? 50;
    this.clock = options.clock ?? systemClock;
    this.sleep = options.sleep ?? realSleep;
    this.secrets = options.secrets ?? { names: new Set([GATEWAY_KEY_VARIABLE]), redactor: Redactor.none };
    this.profile = options.profile ?? "";
    this.ledger = options.ledger ?? null;
    this.envAllow = options.envAllow ?? [];
  }

  /** The mark of a command of `taskId` (none without an owner identity). */
  private mark(taskId: string): Record<string, string> {
    return this.owner === null ? {} : markEnv(this.profile, this.owner, taskId);
  }

  /** The environment a command of `taskId` gets (what its `$NAME`s are, for the exec policy). */
  environment(taskId = ""): Record<string, string> {
    return childEnvironment(this.secrets, this.mark(taskId), process.env, this.envAllow);
  }

  /** Starts `sh -c command` as the leader of a new process group; rejects if it cannot start. */
  async start(command: string, options: StartOptions): Promise<ProcessInfo> {
    return (await this.launch(command, options)).info();
  }

  /** Like start, with a handle that stays valid even after a cleanup forgot the process. */
  async launch(command: string, requested: StartOptions): Promise<ProcessHandle> {
    const options = { ...requested, env: { ...requested.env, ...this.mark(requested.taskId) } };
    const child = spawn("/bin/sh", ["-c", command], {
      cwd: options.cwd,
      env: childEnvironment(this.secrets, options.env, process.env, this.envAllow),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Read before the event loop runs, so the child cannot have been reaped yet.
    const start = child.pid === undefined ? undefined : readStat(child.pid)?.start;
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    // Later errors (none expected once spawned) must not crash the process.
    child.on("error", () => {});
    const pid = child.pid as number;
    const stdout = new OutputBuffer(this.headBytes, this.tailBytes);
    const stderr = new OutputBuffer(this.headBytes, this.tailBytes);
    pipeOutput(child.stdout, stdout, this.secrets.redactor);
    pipeOutput(child.stderr, stderr, this.secrets.redactor);
    const entry: Entry = {
      id: `proc_${this.nextId++}`,
      taskId: options.taskId,
      command,
      cwd: options.cwd,
      pid,
      foreground: options.foreground ?? false,
      child,
      startedAt: this.clock.now(),
      endedAt: null,
      exitCode: null,
      signal: null,
      stdout,
      stderr,
      cursors: new Map(),
      exited: new Promise((resolve) => {
        child.once("exit", (code, signal) => {
          entry.exitCode = code;
          entry.signal = signal;
          entry.endedAt = this.clock.now();
          resolve();
        });
      }),
      closed: new Promise((resolve) => child.once("close", () => resolve())),
    };
    this.entries.set(entry.id, entry);
    this.launched.add(entry.taskId);
    if (start !== undefined && Number.isFinite(start)) {
      void this.ledger?.add(entry.id, {
        pid,
        start,
        task_id: entry.taskId,
        command,
        cwd: entry.cwd,
        started_at: entry.startedAt,
      });
    }
    this.prune();
    return this.handle(entry);
  }

  /** Every process, or those of one task, oldest first. */
  list(taskId?: string): ProcessInfo[] {
    const out: ProcessInfo[] = [];
    for (const entry of this.entries.values()) {
      if (taskId === undefined || entry.taskId === taskId) out.push(this.info(entry));
    }
    return out;
  }

  /** The process, or undefined when the id is unknown (or forgotten). */
  get(id: string): ProcessInfo | undefined {
    const entry = this.entries.get(id);
    return entry && this.info(entry);
  }

  /** State and the output `reader` has not seen yet (at most pollBytes a stream: head and tail). */
  poll(id: string, reader = "", maxBytes = this.pollBytes): PollResult {
    const entry = this.require(id);
    const cursor = entry.cursors.get(reader) ?? { stdout: 0, stderr: 0 };
    const out = entry.stdout.excerpt(cursor.stdout, maxBytes);
    const err = entry.stderr.excerpt(cursor.stderr, maxBytes);
    entry.cursors.set(reader, { stdout: entry.stdout.total, stderr: entry.stderr.total });
    const result: PollResult = { ...this.info(entry), stdout: out.text, stderr: err.text };
    if (out.omitted_bytes > 0 || err.omitted_bytes > 0) {
      result.omitted_bytes = { stdout: out.omitted_bytes, stderr: err.omitted_bytes };
    }
    return result;
  }

  /** Whether any process of its group is alive (false for an unknown id). */
  alive(id: string): boolean {
    const entry = this.entries.get(id);
    return entry !== undefined && this.entryAlive(entry);
  }

  /** How many of the known processes are alive. */
  liveCount(): number {
    let count = 0;
    for (const entry of this.entries.values()) if (this.entryAlive(entry)) count++;
    return count;
  }

  /** Kills the whole group (SIGTERM, then SIGKILL after the grace) and waits until it is gone. */
  async kill(id: string): Promise<KillResult> {
    const entry = this.require(id);
    const killed = await this.stop(entry);
    return { ...this.info(entry), killed };
  }

  /** Kills and forgets every process the task owns, leaving other tasks' alone; returns their ids. */
  async cleanupTask(taskId: string): Promise<string[]> {
    const escaped =
      this.launched.delete(taskId) && this.owner !== null ? { owner: this.owner, taskId } : null;
    return this.cleanup(
      [...this.entries.values()].filter((entry) => entry.taskId === taskId),
      escaped,
    );
  }

  /** Kills and forgets every process: for shutdown. */
  async cleanupAll(): Promise<string[]> {
    const escaped = this.launched.size > 0 && this.owner !== null ? { owner: this.owner } : null;
    this.launched.clear();
    return this.cleanup([...this.entries.values()], escaped);
  }

  /** Ends the entries' groups and, with `escaped`, every process carrying a matching mark. */
  private async cleanup(entries: Entry[], escaped: ScanFilter | null): Promise<string[]> {
    await Promise.all([...entries.map((entry) => this.stop(entry)), escaped && this.stopMarked(escaped)]);
    for (const entry of entries) this.entries.delete(entry.id);
    const ids = entries.map((entry) => entry.id);
    await this.ledger?.remove(ids);
    return ids;
  }

  /**
   * Kills what carries the mark wherever it went (its own session after `setsid`, reparented to
   * init after a double fork). Looked for again after each round, since what it killed may have
   * started more meanwhile; three rounds bound a command that forks without end.
   */
  private async stopMarked(filter: ScanFilter): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const found = await scanMarked(filter);
      if (found.length === 0) return;
      await killProcesses(
        found.map((p) => ({ ...p, group: true })),
        { graceMs: this.graceMs, sleep: this.sleep },
      );
    }
  }

  private async stop(entry: Entry): Promise<boolean> {
    const gone = await killGroup(entry.pid, { graceMs: this.graceMs, sleep: this.sleep });
    // With the group gone the shell is dead too, and its exit event is on its way.
    if (gone) await entry.exited;
    return gone;
  }

  private handle(entry: Entry): ProcessHandle {
    return {
      id: entry.id,
      info: () => this.info(entry),
      alive: () => this.entryAlive(entry),
      waitForExit: (signal) => waitForExit(entry, signal),
      settle: (ms) => this.settle(entry, ms),
      output: (maxBytes) => {
        const out = entry.stdout.excerpt(0, maxBytes);
        const err = entry.stderr.excerpt(0, maxBytes);
        return {
          stdout: out.text,
          stderr: err.text,
          omitted_bytes: { stdout: out.omitted_bytes, stderr: err.omitted_bytes },
        };
      },
      kill: async () => {
        const killed = await this.stop(entry);
        return { ...this.info(entry), killed };
      },
      keepInBackground: () => {
        entry.foreground = false;
        return this.info(entry);
      },
      forget: () => {
        if (this.entries.get(entry.id) !== entry || this.entryAlive(entry)) return;
        this.entries.delete(entry.id);
        void this.ledger?.remove([entry.id]);
      },
    };
  }

  private async settle(entry: Entry, ms: number): Promise<boolean> {
    const stop = new AbortController();
    const timedOut = this.sleep(ms, stop.signal).then(
      () => false,
      () => false,
    );
    const closed = await Promise.race([entry.closed.then(() => true), timedOut]);
    stop.abort();
    if (!closed) {
      entry.child.stdout?.destroy();
      entry.child.stderr?.destroy();
    }
    return closed;
  }

  private entryAlive(entry: Entry): boolean {
    return entry.endedAt === null || groupAlive(entry.pid);
  }

  private require(id: string): Entry {
    const entry = this.entries.get(id);
    if (!entry) throw new Error(`no process "${id}"`);
    return entry;
  }

  /** Forgets the oldest finished background processes beyond maxFinished. */
  private prune(): void {
    const finished = [...this.entries.values()].filter(
      (entry) => !entry.foreground && entry.endedAt !== null,
    );
    if (finished.length <= this.maxFinished) return;
    finished.sort((a, b) => (a.endedAt ?? 0) - (b.endedAt ?? 0));
    let excess = finished.length - this.maxFinished;
    const forgotten: string[] = [];
    for (const entry of finished) {
      if (excess === 0) break;
      if (groupAlive(entry.pid)) continue;
      this.entries.delete(entry.id);
      forgotten.push(entry.id);
      excess--;
    }
    void this.ledger?.remove(forgotten);
  }

  private info(entry: Entry): ProcessInfo {
    return {
      id: entry.id,
      task_id: entry.taskId,
      command: entry.command,
      cwd: entry.cwd,
      pid: entry.pid,
      foreground: entry.foreground,
      status: this.entryAlive(entry) ? "running" : "exited",
      exit_code: entry.exitCode,
      signal: entry.signal,
      started_at: new Date(entry.startedAt).toISOString(),
      ended_at: entry.endedAt === null ? null : new Date(entry.endedAt).toISOString(),
      output_bytes: { stdout: entry.stdout.total, stderr: entry.stderr.total },
    };
  }
}
