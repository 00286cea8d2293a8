// When the writer re-reads its pages: after a change to the files it did not make (seen by their
// size and times, a file appearing too), at least every `everyMs` whatever they say, never for its
// own commits; "always" and "off" as they say.
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { PageReread } from "./page-reread.js";

function files() {
  const dir = tempDir();
  const db = join(dir, "state.db");
  const wal = join(dir, "state.db-wal");
  writeFileSync(db, "pages");
  return { db, wal };
}

describe("the writer's page re-read", () => {
  it("re-reads after a change it did not make and periodically, not after its own commits", () => {
    const { db, wal } = files();
    let now = 0;
    const reread = new PageReread([db, wal], "changed", () => now, 1000);
    // Nothing seen yet: the first commit reads from the file.
    expect(reread.beforeCommit()).toBe(true);
    reread.ownCommit();
    expect(reread.beforeCommit()).toBe(false);
    // Its own commit writes the WAL (it appears) and is seen as its own.
    appendFileSync(wal, "frame 1");
    reread.ownCommit();
    now = 999;
    expect(reread.beforeCommit()).toBe(false);
    // Something else writes either file: the next commit re-reads.
    appendFileSync(db, "garbage");
    expect(reread.beforeCommit()).toBe(true);
    reread.ownCommit();
    expect(reread.beforeCommit()).toBe(false);
    appendFileSync(wal, "someone's frame");
    expect(reread.beforeCommit()).toBe(true);
    reread.ownCommit();
    expect(reread.counts).toEqual({ changed: 3, periodic: 0 });
    // A second after the last re-read, whatever the files say.
    now = 999 + 999;
    expect(reread.beforeCommit()).toBe(false);
    now = 999 + 1000;
    expect(reread.beforeCommit()).toBe(true);
    expect(reread.beforeCommit()).toBe(false);
    expect(reread.counts).toEqual({ changed: 3, periodic: 1 });
  });

  it('"always" re-reads before every commit, "off" never', () => {
    const { db, wal } = files();
    const always = new PageReread([db, wal], "always", () => 0);
    const off = new PageReread([db, wal], "off", () => 0);
    for (let i = 0; i < 3; i++) {
      expect(always.beforeCommit()).toBe(true);
      always.ownCommit();
      appendFileSync(db, "x");
      expect(off.beforeCommit()).toBe(false);
    }
  });
});
