// A real store's writes counted as the store is asked for them (write and writeStaged), from now
// on: a write asks for a sync of the WAL unless it is made durable with the next one
// (ApplyOptions.durableWithNext). Only the writes `counted` picks are counted, since the process's
// other writers (the provider health records) commit on their own timers. `restore` puts the
// store's own methods back.
import type { ApplyOptions, WriteOp } from "../../src/store/ops.js";
import type { Store } from "../../src/store/store.js";

export interface CountedWrite {
  synced: boolean;
  /** The names of its operations, in order. */
  ops: string[];
}

export interface WriteCounts {
  /** Writes that asked for a sync, and writes durable with the next one. */
  counts: { syncs: number; lazy: number };
  writes: CountedWrite[];
  /** Count afresh from here. */
  reset(): void;
  restore(): void;
}

export function countWrites(store: Store, counted: (ops: readonly WriteOp[]) => boolean): WriteCounts {
  const counts = { syncs: 0, lazy: 0 };
  const writes: CountedWrite[] = [];
  const count = (ops: readonly WriteOp[], options?: ApplyOptions) => {
    if (!counted(ops)) return;
    const synced = options?.durableWithNext !== true;
    if (synced) counts.syncs++;
    else counts.lazy++;
    writes.push({ synced, ops: ops.map((op) => op.op) });
  };
  const write = store.write.bind(store);
  const writeStaged = store.writeStaged.bind(store);
  store.write = (ops, options) => {
    count(ops, options);
    return write(ops, options);
  };
  store.writeStaged = (ops, options) => {
    count(ops, options);
    return writeStaged(ops, options);
  };
  return {
    counts,
    writes,
    reset: () => {
      counts.syncs = 0;
      counts.lazy = 0;
      writes.length = 0;
    },
    restore: () => {
      store.write = write;
      store.writeStaged = writeStaged;
    },
  };
}
