// The spool next to a damaged store holds writes the store could not take; recovery folds them in.
// Files are read with readSpool while their sizes stay put (a running gateway may still append), so
// the byte count recorded for each file is exactly what was folded, and a later restore replays
// only what came after it.
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { readSpool, type SpoolRecord } from "../spool.js";

export interface SpoolFold {
  dir: string;
  /** Spool file names (not paths), oldest first. */
  files: string[];
  /** Bytes of each file that were read, by file name. */
  bytes: Record<string, number>;
  /** Records of this profile, in order. */
  records: SpoolRecord[];
  /** Records written for another profile: never replayed here. */
  foreign: number;
  /** Lines that were not records (a torn last line after a crash). */
  skippedLines: number;
  ops: number;
  /** message.append operations whose uid the salvaged rows do not hold. */
  messagesNew: number;
  /** message.append operations whose uid is already salvaged (or earlier in the spool). */
  duplicates: number;
}

function sizes(files: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const file of files) {
    try {
      out.set(file, statSync(file).size);
    } catch {
      out.set(file, -1);
    }
  }
  return out;
}

const sameSizes = (a: Map<string, number>, b: Map<string, number>) =>
  a.size === b.size && [...a].every(([file, size]) => b.get(file) === size);

/** Read the spool in `dir` for `profile`, counting which messages it would add to `knownUids`. */
export function foldSpool(dir: string, profile: string, knownUids: ReadonlySet<string>): SpoolFold {
  const list = () =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith(".jsonl"))
          .map((f) => join(dir, f))
      : [];
  // Sizes taken before and after the read agree only if nothing was appended meanwhile.
  let before = sizes(list());
  let read = readSpool(dir);
  for (let attempt = 0; attempt < 5; attempt++) {
    const after = sizes(read.files);
    if (sameSizes(before, after)) break;
    before = after;
    read = readSpool(dir);
  }
  const records = read.records.filter((r) => r.profile === profile);
  const seen = new Set(knownUids);
  let ops = 0;
  let messagesNew = 0;
  let duplicates = 0;
  for (const record of records) {
    for (const op of record.ops) {
      ops++;
      if (op.op !== "message.append") continue;
      if (seen.has(op.uid)) duplicates++;
      else {
        messagesNew++;
        seen.add(op.uid);
      }
    }
  }
  return {
    dir,
    files: read.files.map((f) => basename(f)),
    bytes: Object.fromEntries([...before].map(([file, size]) => [basename(file), size])),
    records,
    foreign: read.records.length - records.length,
    skippedLines: read.skipped.length,
    ops,
    messagesNew,
    duplicates,
  };
}
