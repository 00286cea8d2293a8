// When the writer must read its pages from the file again instead of trusting its page cache.
// SQLite re-reads by itself whatever another connection committed (the WAL index says so), but not
// a file changed under it by anything else: a page damaged on disk stays hidden behind a cached good
// copy while new writes are acknowledged on top of it. Dropping the cache before every commit finds
// such damage at the next write that touches it, and costs every commit a read of each page it
// touches. This keeps the finding and drops the cost:
//
// - Before a commit the writer looks at state.db and its WAL (size, change and modification time,
//   inode: one stat each). If either changed since the writer last looked after a commit of its own,
//   something else wrote: the cache is dropped and the commit reads its pages from the file.
// - In any case the cache is dropped at least every `everyMs`, for a change the stat cannot see:
//   one made in the same clock tick as the writer's own last look (file systems keep coarse
//   timestamps, except where the kernel refines a timestamp someone looked at), or while the
//   writer's own commit ran.
//
// "always" restores a re-read before every commit (the benchmarks compare the two), "off" never
// re-reads (a diagnosis: damage is then found by the continuous page check only).
import { type Stats, statSync } from "node:fs";

export type RereadMode = "changed" | "always" | "off";

/** How often the cache is dropped whatever the files say (ms). */
export const REREAD_EVERY_MS = 1000;

/** Per file: inode, size, modification and change time (ms, with the file system's sub-ms part). */
type Look = number[];

export class PageReread {
  private seen: Look | null = null;
  private lastReread = Number.NEGATIVE_INFINITY;
  /** Re-reads so far, and why (for tests and the profile). */
  readonly counts = { changed: 0, periodic: 0 };

  constructor(
    private readonly files: readonly string[],
    private readonly mode: RereadMode,
    private readonly now: () => number,
    private readonly everyMs = REREAD_EVERY_MS,
  ) {}

  /** Before a commit: whether the writer drops its cached pages first. */
  beforeCommit(): boolean {
    if (this.mode === "off") return false;
    const now = this.now();
    if (this.mode === "always") return this.reread(now);
    if (this.seen === null || !same(this.look(), this.seen)) {
      this.counts.changed++;
      return this.reread(now);
    }
    if (now - this.lastReread >= this.everyMs) {
      this.counts.periodic++;
      return this.reread(now);
    }
    return false;
  }

  /** After a commit of the writer's own (a group, the search queue, the key ledger): what it wrote is known. */
  ownCommit(): void {
    if (this.mode === "changed") this.seen = this.look();
  }

  private reread(now: number): true {
    this.lastReread = now;
    return true;
  }

  private look(): Look {
    const look: Look = [];
    for (const file of this.files) {
      const stat: Stats | undefined = statSync(file, { throwIfNoEntry: false });
      if (stat === undefined) look.push(-1, -1, -1, -1);
      else look.push(stat.ino, stat.size, stat.mtimeMs, stat.ctimeMs);
    }
    return look;
  }
}

function same(a: Look, b: Look): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}
