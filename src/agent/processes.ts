// The commands every task of this Tenax process runs: each a shell leading its own process group,
// owned by the task that started it, its output in bounded buffers. Each is marked in its
// environment with its task and this process (process-marks.ts) and recorded in the ledger while it
// runs (process-ledger.ts). When a task ends, its groups are killed, and so is every process carrying
// its mark (one that left the group with `setsid`), and nobody else's. Exit is observed through the
// child's own events: no timer per process. In a sandbox (sandbox/), the group's leader is bwrap
// (process-spawn.ts says when the shell in it ended), and bwrap is spared SIGTERM, so what runs in
// the sandbox can end gracefully before the SIGKILL that ends the sandbox.
import type { ChildProcess } from "node:child_process";
import { GATEWAY_KEY_VARIABLE } from "../config/gateway-key.js";
import type { ProfileSecrets } from "../config/profile-secrets.js";
import { type Clock, realSleep, type Sleep, systemClock } from "../core/deps.js";
import { Redactor } from "../core/redact.js";
import { childEnvironment } from "./child-env.js";
import type { OutputBuffer } from "./output-buffer.js";
import { DEFAULT_GRACE_MS, groupAlive, killGroup } from "./process-group.js";
import { killProcesses, type ProcessIdentity, selfIdentity } from "./process-identity.js";
import type { ProcessLedger } from "./process-ledger.js";
import { markEnv, type ScanFilter, scanMarked } from "./process-marks.js";
import { spawnCommand } from "./process-spawn.js";
import type {
  KillResult,
  PollResult,
  ProcessHandle,
  ProcessInfo,
  ProcessRegistryOptions,
  StartOptions,
} from "./process-types.js";
import type { CommandSandbox } from "./sandbox/sandbox.js";

export type {
  KillResult,
  PollResult,
  ProcessHandle,
  ProcessInfo,
  ProcessRegistryOptions,
  StartOptions,
} from "./process-types.js";

interface Entry {
  id: string;
  taskId: string;
  command: string;
  cwd: string;
  pid: number;
  foreground: boolean;
  /** Started in a sandbox: `pid` is bwrap's, which SIGTERM spares. */
  sandboxed: boolean;
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
  /** Every output pipe has closed: what the command wrote is all in the buffers. */
  outputClosed: boolean;
  /** A poll already waited DRAIN_MS for the pipes of this ended command; later polls do not. */
  drainWaited: boolean;
}

/**
 * How long a poll of an ended command waits for its last output. The shell's exit event may come
 * before its pipes are read to the end; past this, what still holds them left the group.
 */
const DRAIN_MS = 1_000;

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
  private readonly sandbox: CommandSandbox | null;
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
    this.sandbox = options.sandbox ?? null;
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
    const spawned = await spawnCommand(command, {
      cwd: options.cwd,
      env: childEnvironment(this.secrets, options.env, process.env, this.envAllow),
      sandbox: this.sandbox,
      redactor: this.secrets.redactor,
      headBytes: this.headBytes,
      tailBytes: this.tailBytes,
    });
    const { child, pid, start, stdout, stderr } = spawned;
    const entry: Entry = {
      id: `proc_${this.nextId++}`,
      taskId: options.taskId,
      command,
      cwd: options.cwd,
      pid,
      foreground: options.foreground ?? false,
      sandboxed: this.sandbox !== null,
      child,
      startedAt: this.clock.now(),
      endedAt: null,
      exitCode: null,
      signal: null,
      stdout,
      stderr,
      cursors: new Map(),
      exited: spawned.ended.then(({ code, signal }) => {
        entry.exitCode = code;
        entry.signal = signal;
        entry.endedAt = this.clock.now();
      }),
      closed: spawned.closed.then(() => {
        entry.outputClosed = true;
      }),
      outputClosed: false,
      drainWaited: false,
    };
    this.entries.set(entry.id, entry);
    this.launched.add(entry.taskId);
    if (start !== null) {
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

  /** Bytes the processes of `taskId` have written so far (stdout and stderr), as far as they are known. */
  outputBytes(taskId: string): number {
    let total = 0;
    for (const entry of this.entries.values())
      if (entry.taskId === taskId) total += entry.stdout.total + entry.stderr.total;
    return total;
  }

  /** The process, or undefined when the id is unknown (or forgotten). */
  get(id: string): ProcessInfo | undefined {
    const entry = this.entries.get(id);
    return entry && this.info(entry);
  }

  /**
   * State and the output `reader` has not seen yet (at most pollBytes a stream: head and tail).
   * A command reported exited has its output in: the poll first waits (bounded) for its pipes.
   */
  async poll(id: string, reader = "", maxBytes = this.pollBytes): Promise<PollResult> {
    const entry = this.require(id);
    if (!entry.outputClosed && !entry.drainWaited && !this.entryAlive(entry)) {
      entry.drainWaited = true;
      await this.outputIn(entry, DRAIN_MS);
    }
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
    // A sandbox's bwrap carries the mark too; its own stop spares it SIGTERM, and so does the scan.
    const spared = new Set(entries.filter((e) => e.sandboxed).map((e) => e.pid));
    await Promise.all([
      ...entries.map((entry) => this.stop(entry)),
      escaped && this.stopMarked(escaped, spared),
    ]);
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
  private async stopMarked(filter: ScanFilter, spared: ReadonlySet<number>): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const found = (await scanMarked(filter)).filter((p) => !spared.has(p.pid));
      if (found.length === 0) return;
      await killProcesses(
        found.map((p) => ({ ...p, group: true })),
        { graceMs: this.graceMs, sleep: this.sleep },
      );
    }
  }

  private async stop(entry: Entry): Promise<boolean> {
    const gone = await killGroup(entry.pid, {
      graceMs: this.graceMs,
      sleep: this.sleep,
      ...(entry.sandboxed ? { spare: entry.pid } : {}),
    });
    // With the group gone the shell is dead too, and its exit event is on its way; in a sandbox,
    // bwrap's too (entryAlive reads it).
    if (gone) await entry.exited;
    if (gone && entry.sandboxed) await bwrapExited(entry.child);
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

  /** Whether the output pipes closed within `ms`. */
  private async outputIn(entry: Entry, ms: number): Promise<boolean> {
    if (entry.outputClosed) return true;
    const stop = new AbortController();
    const timedOut = this.sleep(ms, stop.signal).then(
      () => false,
      () => false,
    );
    const closed = await Promise.race([entry.closed.then(() => true), timedOut]);
    stop.abort();
    return closed;
  }

  /** Waits up to `ms` for the output pipes, then stops reading them (what holds them left the group). */
  private async settle(entry: Entry, ms: number): Promise<boolean> {
    const closed = await this.outputIn(entry, ms);
    if (!closed) {
      entry.child.stdout?.destroy();
      entry.child.stderr?.destroy();
    }
    return closed;
  }

  private entryAlive(entry: Entry): boolean {
    if (entry.endedAt === null) return true;
    // In a sandbox, bwrap runs as long as anything in it does (the supervisor stays for what a
    // command left) and everything in it dies with its pid namespace. The namespace's init, being
    // torn down, may linger in the group a moment after bwrap exits: that is no process left running.
    if (entry.sandboxed) return entry.child.exitCode === null && entry.child.signalCode === null;
    return groupAlive(entry.pid);
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

/** When bwrap (a sandboxed entry's child) has exited and Node has said so. */
function bwrapExited(child: Entry["child"]): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}
