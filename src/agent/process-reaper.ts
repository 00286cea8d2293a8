// What a Tenax process of this profile left running when it died (kill -9, a crash, a power cut of
// the process only): found from the durable records of the ledger (a recorded shell, pid and start
// time verified) and from a /proc scan for this profile's mark, and ended. A process is an orphan
// only when its owner (the Tenax process named in its mark or record, pid and start time) is gone:
// a `tenax chat` running beside the gateway owns live tasks, and their processes are left alone.
import { hostname } from "node:os";
import type { StorePort } from "../store/port.js";
import {
  isRunning,
  type KillTarget,
  killProcesses,
  type ProcessIdentity,
  sameProcess,
} from "./process-identity.js";
import { ownerRecordOp, ownerRecordSchema, PROCESS_KIND } from "./process-ledger.js";
import { ownerText, scanMarked } from "./process-marks.js";

export interface ReapedProcess {
  pid: number;
  task_id: string;
  /** The owner that died, as `pid:start`. */
  owner: string;
  /** The recorded command; null for one found only by its mark (a descendant of a command). */
  command: string | null;
  /** How it was found: its shell's record, or its mark in /proc. */
  found: "record" | "mark";
}

export interface ProcessReapReport {
  reaped: ReapedProcess[];
  /** Alive even after SIGKILL (stuck in the kernel): their records are kept. */
  survived: ReapedProcess[];
  /** Why part of the search could not be done (the records could not be read). */
  problems: string[];
}

export interface ReapProcessesOptions {
  store: StorePort;
  /** The profile's folder, as written in the marks. */
  profile: string;
  /** This process: never an orphan, whatever a record says. */
  self: ProcessIdentity | null;
  bootId: string | null;
  graceMs: number;
  now: () => number;
}

interface Orphan extends KillTarget {
  reaped: ReapedProcess;
  /** The record it came from, to delete once nothing of it lives. */
  recordKey: string | null;
}

const ownerAlive = (owner: ProcessIdentity | null, self: ProcessIdentity | null) =>
  owner !== null && ((self !== null && sameProcess(owner, self)) || isRunning(owner));

export async function reapOrphanProcesses(options: ReapProcessesOptions): Promise<ProcessReapReport> {
  const { store, profile, self, bootId } = options;
  const orphans = new Map<number, Orphan>();
  /** Records of dead owners, by key: deleted once all their processes are gone. */
  const deadKeys = new Set<string>();

  const problems: string[] = [];
  let records: Awaited<ReturnType<StorePort["listRecords"]>> = [];
  try {
    records = await store.listRecords(PROCESS_KIND);
  } catch (error) {
    problems.push(
      `the records of running commands could not be read (${(error as Error).message}); only their marks were searched`,
    );
  }
  for (const record of records) {
    const parsed = ownerRecordSchema.safeParse(record.value);
    if (!parsed.success) {
      // Not a record Tenax wrote (nothing in it can be verified): dropped, its processes left alone.
      deadKeys.add(record.key);
      continue;
    }
    const value = parsed.data;
    // Another host's record (a store several hosts share): its processes are that host's to reap.
    if (value.host !== undefined && value.host !== hostname()) continue;
    if (ownerAlive(value.owner, self)) continue;
    deadKeys.add(record.key);
    // After a reboot every recorded pid names some other process.
    if (value.boot_id !== bootId) continue;
    for (const p of value.processes) {
      if (!isRunning(p)) continue;
      orphans.set(p.pid, {
        pid: p.pid,
        start: p.start,
        group: true,
        recordKey: record.key,
        reaped: {
          pid: p.pid,
          task_id: p.task_id,
          owner: ownerText(value.owner),
          command: p.command,
          found: "record",
        },
      });
    }
  }

  for (const found of await scanMarked({ profile })) {
    if (orphans.has(found.pid) || ownerAlive(found.marks.owner, self)) continue;
    orphans.set(found.pid, {
      pid: found.pid,
      start: found.start,
      group: true,
      recordKey: null,
      reaped: {
        pid: found.pid,
        task_id: found.marks.taskId,
        owner: found.marks.owner === null ? "unknown" : ownerText(found.marks.owner),
        command: null,
        found: "mark",
      },
    });
  }

  const targets = [...orphans.values()];
  const left = new Set((await killProcesses(targets, { graceMs: options.graceMs })).map((t) => t.pid));
  const survived = targets.filter((t) => left.has(t.pid));
  for (const t of survived) if (t.recordKey !== null) deadKeys.delete(t.recordKey);
  if (deadKeys.size > 0) {
    const at = options.now();
    // A refused write leaves the records for the next start, which finds their processes gone.
    await store.write([...deadKeys].map((key) => ownerRecordOp(key, null, at))).catch(() => {});
  }
  return {
    reaped: targets.filter((t) => !left.has(t.pid)).map((t) => t.reaped),
    survived: survived.map((t) => t.reaped),
    problems,
  };
}

/** One line for the operator per process ended (or not) and per problem. */
export function describeProcessReap(report: ProcessReapReport): string[] {
  const what = (p: ReapedProcess) =>
    p.command === null
      ? `process ${p.pid} (started by a command of task ${p.task_id}, found by its mark)`
      : `process ${p.pid} (${JSON.stringify(p.command)}, task ${p.task_id})`;
  return [
    ...report.reaped.map(
      (p) => `reaped ${what(p)}: Tenax process ${p.owner}, which ran it, is gone; it was ended`,
    ),
    ...report.survived.map(
      (p) =>
        `${what(p)} was left by Tenax process ${p.owner}, which is gone, and survived SIGKILL (stuck in the kernel); its record is kept`,
    ),
    ...report.problems.map((problem) => `reaping processes: ${problem}`),
  ];
}
