// The durable list of the commands a Tenax process has running: one record per owner process in
// the store (kind `process`, key `pid:N`), holding its identity, the boot, and each command's shell
// (pid, start time, task, command). It is rewritten whole when a command starts or is known dead
// and reaped, and deleted when none is left, so a process that dies leaves exactly what it still
// had running; the next process of the profile reaps it (process-reaper.ts). Keyed by the owner's
// pid, the table keeps at most one row per pid however many processes come and go.
//
// A command is recorded right after it is spawned (its pid and start time are known only then),
// without making the command wait for the commit: a crash before the record is on disk leaves the
// command's environment mark (process-marks.ts), which the reaper finds the same way.
import { hostname } from "node:os";
import { z } from "zod";
import type { RecordPutOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import type { ProcessIdentity } from "./process-identity.js";

export const PROCESS_KIND = "process";

/** The longest command text kept in a record (the transcript holds the whole call). */
const MAX_COMMAND_CHARS = 500;

const identity = { pid: z.number().int().positive(), start: z.number().int().nonnegative() };

const recordedProcessSchema = z.object({
  ...identity,
  task_id: z.string(),
  command: z.string(),
  cwd: z.string(),
  started_at: z.number(),
});

/** What a record holds, checked when it is read back (a row is never trusted blindly). */
export const ownerRecordSchema = z.object({
  owner: z.object(identity),
  /** The boot the pids belong to: after a reboot they name other processes. */
  boot_id: z.string().nullable(),
  /**
   * The host the pids belong to, on a store several hosts share: another host's record is never
   * judged here (its pids name processes /proc here cannot see). Absent: this host's.
   */
  host: z.string().optional(),
  profile: z.string(),
  processes: z.array(recordedProcessSchema),
});

export type RecordedProcess = z.infer<typeof recordedProcessSchema>;
export type OwnerRecord = z.infer<typeof ownerRecordSchema>;

/** A record's key: its owner's pid, and its host on a store several hosts share (pids repeat there). */
export const ownerKey = (pid: number, host?: string) =>
  host === undefined ? `pid:${pid}` : `${host}/pid:${pid}`;

/** A put of an owner's record (by its key), or its deletion when `value` is null. */
export function ownerRecordOp(key: string, value: OwnerRecord | null, updatedAt: number): RecordPutOp {
  return {
    op: "record.put",
    kind: PROCESS_KIND,
    key,
    session_id: null,
    value: value === null ? null : JSON.stringify(value),
    updated_at: updatedAt,
  };
}

export interface ProcessLedgerOptions {
  store: StorePort;
  owner: ProcessIdentity;
  bootId: string | null;
  profile: string;
  now: () => number;
}

export class ProcessLedger {
  private readonly live = new Map<string, RecordedProcess>();
  /** Never older than the last write: a clock stepped back must not make a rewrite lose. */
  private stamp = 0;

  constructor(private readonly options: ProcessLedgerOptions) {}

  /** Records a started command under the registry's id for it. */
  add(id: string, process: RecordedProcess): Promise<void> {
    this.live.set(id, { ...process, command: process.command.slice(0, MAX_COMMAND_CHARS) });
    return this.flush();
  }

  /** Forgets commands known dead and reaped; nothing is written when none was recorded. */
  remove(ids: readonly string[]): Promise<void> {
    let changed = false;
    for (const id of ids) changed = this.live.delete(id) || changed;
    return changed ? this.flush() : Promise.resolve();
  }

  private flush(): Promise<void> {
    const { store, owner, bootId, profile, now } = this.options;
    this.stamp = Math.max(this.stamp, now());
    // On a shared store the record names its host: others leave it to this host's processes.
    const host = store.engine === "postgres" ? hostname() : undefined;
    const value: OwnerRecord | null =
      this.live.size === 0
        ? null
        : { owner, boot_id: bootId, ...(host ? { host } : {}), profile, processes: [...this.live.values()] };
    // Writes apply in call order, so the last state written is the last one stored. A store that
    // refuses the write says so through its own health; the environment mark still finds the command.
    return store.write([ownerRecordOp(ownerKey(owner.pid, host), value, this.stamp)]).then(
      () => {},
      () => {},
    );
  }
}
