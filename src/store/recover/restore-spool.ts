// After a restore, the profile's spool: files the recovery folded in move to spool/replayed/, and
// whatever was spooled after the recovery (new files, or records appended past the bytes the
// recovery read) is replayed into the restored store first.
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import type { ProfilePaths } from "../../profile/paths.js";
import { storeOptions } from "../registry.js";
import type { SpoolRecord } from "../spool.js";
import { Store } from "../store.js";

export interface SpoolReplay {
  /** Spool files the recovery had folded in, now under spool/replayed/. */
  moved: string[];
  /** Spool files (or parts of them) written after the recovery, replayed into the restored store. */
  replayed_files: string[];
  records: number;
  ops: number;
  messages: number;
  duplicates: number;
  failed: { file: string; reason: string }[];
}

function fsyncDir(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Records of a spool file from byte `start` on, validated as readSpool does. */
function recordsFrom(file: string, start: number): { records: SpoolRecord[]; bad: number } {
  const fd = openSync(file, "r");
  let text: string;
  try {
    const size = statSync(file).size;
    const buf = Buffer.alloc(Math.max(0, size - start));
    readSync(fd, buf, 0, buf.length, start);
    text = buf.toString("utf8");
  } finally {
    closeSync(fd);
  }
  const records: SpoolRecord[] = [];
  let bad = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const record = JSON.parse(line) as SpoolRecord;
      if (record.v !== 1 || !Array.isArray(record.ops)) throw new Error("not a spool record");
      records.push(record);
    } catch {
      bad++;
    }
  }
  return { records, bad };
}

export async function replayNewSpool(paths: ProfilePaths, meta: Map<string, string>): Promise<SpoolReplay> {
  const folded = new Set(JSON.parse(meta.get("recovered_spool_files") ?? "[]") as string[]);
  const bytes = JSON.parse(meta.get("recovered_spool_bytes") ?? "{}") as Record<string, number>;
  const result: SpoolReplay = {
    moved: [],
    replayed_files: [],
    records: 0,
    ops: 0,
    messages: 0,
    duplicates: 0,
    failed: [],
  };
  if (!existsSync(paths.spool)) return result;
  const names = readdirSync(paths.spool)
    .filter((f) => f.endsWith(".jsonl"))
    .sort();
  const done = join(paths.spool, "replayed");
  const toMove: string[] = [];
  const pending: { name: string; records: SpoolRecord[] }[] = [];
  for (const name of names) {
    const start = folded.has(name) ? (bytes[name] ?? Number.MAX_SAFE_INTEGER) : 0;
    const { records } = recordsFrom(join(paths.spool, name), start);
    const mine = records.filter((r) => r.profile === paths.name);
    if (folded.has(name)) result.moved.push(name);
    if (mine.length > 0) pending.push({ name, records: mine });
    else if (folded.has(name)) toMove.push(name);
  }
  if (pending.length > 0) {
    const store = await Store.open(storeOptions(paths, { integrityCheckTimeoutMs: 0 }));
    try {
      for (const { name, records } of pending) {
        try {
          const r = await store.replay(records);
          result.records += records.length;
          result.ops += r.ops;
          result.messages += r.messages;
          result.duplicates += r.duplicates;
          result.replayed_files.push(name);
          toMove.push(name);
        } catch (error) {
          result.failed.push({ file: name, reason: (error as Error).message });
        }
      }
    } finally {
      store.close();
    }
  }
  mkdirSync(done, { recursive: true, mode: 0o700 });
  for (const name of toMove) {
    let target = join(done, name);
    for (let i = 2; existsSync(target); i++) target = join(done, `${name}.${i}`);
    renameSync(join(paths.spool, name), target);
  }
  fsyncDir(done);
  fsyncDir(paths.spool);
  return result;
}
