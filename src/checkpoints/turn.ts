// The agent's side of checkpoints: one TurnCheckpoints per turn, asked before every file change,
// snapshots each project once, before the turn's first change to it.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { errorMessage } from "../core/errors.js";
import type { CheckpointStore, SnapshotResult } from "./store.js";

export interface CheckpointEvent {
  type: "checkpoint";
  project: string;
  result: SnapshotResult;
}

/** At most one snapshot per turn, taken before the turn's first file change in each project. */
export class TurnCheckpoints {
  private readonly taken = new Map<string, Promise<SnapshotResult>>();

  /** `store` null means checkpoints are off: every call answers null at once. */
  constructor(
    private readonly store: CheckpointStore | null,
    private readonly onEvent?: (event: CheckpointEvent) => void,
  ) {}

  /**
   * Call before changing files in `projectDir`. The first call for a project in this turn takes
   * the snapshot; later and concurrent calls share its result. It never throws: a snapshot that
   * fails is a "skipped" result with the reason, and the change goes ahead.
   */
  beforeChange(projectDir: string, reason: string): Promise<SnapshotResult | null> {
    const store = this.store;
    if (store === null) return Promise.resolve(null);
    const key = projectKey(projectDir);
    const existing = this.taken.get(key);
    if (existing !== undefined) return existing;
    const pending = store
      .snapshot(projectDir, reason)
      .catch(
        (error: unknown): SnapshotResult => ({
          status: "skipped",
          why: `the snapshot failed: ${errorMessage(error)}`,
        }),
      )
      .then((result) => {
        try {
          this.onEvent?.({ type: "checkpoint", project: key, result });
        } catch {
          // A listener's failure is not the snapshot's.
        }
        return result;
      });
    this.taken.set(key, pending);
    return pending;
  }
}

function projectKey(projectDir: string): string {
  try {
    return realpathSync(projectDir);
  } catch {
    return resolve(projectDir);
  }
}
