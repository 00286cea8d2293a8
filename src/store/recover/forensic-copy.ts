// Before anything else, recovery copies the damaged store byte for byte (the database, its WAL and
// its wal-index, those that exist) into a forensic folder with a manifest of sizes and digests. The
// originals are only ever read, never opened with SQLite. Salvage then works on a second copy of
// the database and WAL only: without the -shm, SQLite rebuilds its wal-index from the WAL itself.
import { createHash } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

export type ForensicRole = "db" | "wal" | "shm";

export interface ForensicFile {
  role: ForensicRole;
  original: string;
  copy: string;
  size: number;
  sha256: string;
}

export interface ForensicCopy {
  dir: string;
  manifest: string;
  /** Why the copy is in a temp folder instead of the one asked for (null: it is where asked). */
  fallback: string | null;
  files: ForensicFile[];
  /** The working copy salvage reads with SQLite. */
  work: { dir: string; db: string; wal: string | null };
  /** Set when an original kept changing while it was copied (a process still writing it). */
  unstable: string[];
}

/** `20261129T172800Z`: sorts by time and is safe in a file name. */
export function utcStamp(now: number): string {
  return new Date(now)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}

function copyWithDigest(from: string, to: string): { size: number; sha256: string } {
  const hash = createHash("sha256");
  const src = openSync(from, "r");
  let dst: number | null = null;
  try {
    dst = openSync(to, "wx", 0o600);
    const buf = Buffer.alloc(1 << 20);
    let size = 0;
    for (;;) {
      const n = readSync(src, buf, 0, buf.length, size);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      writeSync(dst, buf, 0, n);
      size += n;
    }
    fsyncSync(dst);
    return { size, sha256: hash.digest("hex") };
  } finally {
    closeSync(src);
    if (dst !== null) closeSync(dst);
  }
}

const fingerprint = (path: string) => {
  const s = statSync(path, { bigint: true });
  return `${s.ino}:${s.size}:${s.mtimeNs}`;
};

/** A fresh folder `<root>/<stamp>-<label>` (with a counter if that name is taken). */
export function makeStampedDir(root: string, now: number, label: string): string {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const base = join(root, `${utcStamp(now)}-${label}`);
  for (let i = 1; ; i++) {
    const dir = i === 1 ? base : `${base}-${i}`;
    try {
      mkdirSync(dir, { mode: 0o700 });
      return dir;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || i > 1000) throw error;
    }
  }
}

function copyInto(dir: string, source: string): { files: ForensicFile[]; unstable: string[] } {
  const files: ForensicFile[] = [];
  const unstable: string[] = [];
  const roles: [ForensicRole, string][] = [
    ["db", source],
    ["wal", `${source}-wal`],
    ["shm", `${source}-shm`],
  ];
  for (const [role, original] of roles) {
    if (!existsSync(original)) continue;
    const copy = join(dir, basename(original));
    // A file that changes while it is read is copied again, a few times at most.
    for (let attempt = 1; ; attempt++) {
      const before = fingerprint(original);
      rmSync(copy, { force: true });
      const { size, sha256 } = copyWithDigest(original, copy);
      if (fingerprint(original) === before || attempt >= 3) {
        if (fingerprint(original) !== before) unstable.push(original);
        files.push({ role, original, copy, size, sha256 });
        break;
      }
    }
  }
  return { files, unstable };
}

export interface ForensicOptions {
  /** Root folder for forensic copies (default: `forensics` beside the source). */
  root?: string;
  now: number;
}

/** Copy the store at `source` into a new forensic folder (or a temp one) and make the working copy. */
export function takeForensicCopy(source: string, options: ForensicOptions): ForensicCopy {
  const root = options.root ?? join(dirname(source), "forensics");
  let dir: string;
  let fallback: string | null = null;
  let copied: { files: ForensicFile[]; unstable: string[] };
  try {
    dir = makeStampedDir(root, options.now, "recover");
    try {
      copied = copyInto(dir, source);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  } catch (error) {
    fallback = `the forensic folder under ${root} could not be written (${(error as Error).message}); the copy went to a temp folder instead`;
    dir = mkdtempSync(join(tmpdir(), `tenax-forensics-${utcStamp(options.now)}-`));
    copied = copyInto(dir, source);
  }
  const manifest = join(dir, "manifest.json");
  writeDurable(
    manifest,
    `${JSON.stringify(
      {
        tool: "tenax sessions recover",
        created_at: new Date(options.now).toISOString(),
        source,
        fallback,
        files: copied.files.map((f) => ({ ...f, copy: basename(f.copy) })),
        changed_while_copied: copied.unstable,
      },
      null,
      2,
    )}\n`,
  );
  const work = join(dir, "work");
  mkdirSync(work, { mode: 0o700 });
  const db = copied.files.find((f) => f.role === "db");
  const wal = copied.files.find((f) => f.role === "wal");
  const workDb = join(work, basename(source));
  if (db) copyFileSync(db.copy, workDb);
  if (wal) copyFileSync(wal.copy, `${workDb}-wal`);
  return {
    dir,
    manifest,
    fallback,
    files: copied.files,
    work: { dir: work, db: workDb, wal: wal ? `${workDb}-wal` : null },
    unstable: copied.unstable,
  };
}

export function writeDurable(file: string, text: string): void {
  const fd = openSync(file, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
