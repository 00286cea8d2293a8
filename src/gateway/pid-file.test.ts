import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { TenaxError } from "../core/errors.js";
import { acquirePidFile, numberedPidFile } from "./pid-file.js";

describe("acquirePidFile", () => {
  it("refuses while a live process holds the file, naming it", () => {
    const file = join(tempDir("tenax-pid-"), "gateway.pid");
    writeFileSync(file, `${process.ppid}\n`);
    let error: unknown;
    try {
      acquirePidFile(file, { pid: process.pid, started_at: 0 }, "work");
    } catch (e) {
      error = e;
    }
    expect(TenaxError.isInstance(error) && error.message).toContain(
      `profile work is already running (pid ${process.ppid}`,
    );
    expect(readFileSync(file, "utf8")).toBe(`${process.ppid}\n`);
  });

  it("on a store gateways share, takes the next numbered file while live gateways hold the first", () => {
    const dir = tempDir("tenax-pid-");
    const file = join(dir, "gateway.pid");
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(file, `${process.ppid}\n`);
    writeFileSync(join(dir, "gateway.2.pid"), `${process.ppid}\n`);
    writeFileSync(join(dir, "gateway.3.pid"), `${JSON.stringify({ pid: dead, started_at: 7 })}\n`);
    const lock = acquirePidFile(file, { pid: process.pid, started_at: 1 }, "work", { shared: true });
    // The first two name a live process; the third's holder died, so it is taken over.
    expect(lock.file).toBe(join(dir, "gateway.3.pid"));
    expect(lock.crashed).toEqual({ pid: dead, started_at: 7 });
    expect(JSON.parse(readFileSync(lock.file, "utf8")).pid).toBe(process.pid);
    expect(readFileSync(file, "utf8")).toBe(`${process.ppid}\n`);
    lock.release();
    expect(existsSync(lock.file)).toBe(false);
    expect(numberedPidFile(file, 1)).toBe(file);
    expect(numberedPidFile(file, 12)).toBe(join(dir, "gateway.12.pid"));
    // The same files without a shared store: refused, saying what would allow a second gateway.
    const refused = (() => {
      try {
        acquirePidFile(file, { pid: process.pid, started_at: 1 }, "work");
      } catch (e) {
        return e;
      }
    })();
    expect(TenaxError.isInstance(refused) && refused.hint).toMatch(/store.engine: postgres/);
  });

  it("reclaims the file of a dead process and releases only its own", () => {
    const file = join(tempDir("tenax-pid-"), "gateway.pid");
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(file, `${JSON.stringify({ pid: dead })}\n`);
    const lock = acquirePidFile(file, { pid: process.pid, started_at: 1 }, "default");
    expect(lock.reclaimed).toBe(dead);
    // Without its start time, the dead holder's turns cannot be told from a later process's.
    expect(lock.crashed).toBeNull();
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    lock.release();
    expect(existsSync(file)).toBe(false);
  });

  it("says which gateway crashed, and since when it ran, when its file said so", () => {
    const file = join(tempDir("tenax-pid-"), "gateway.pid");
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(file, `${JSON.stringify({ pid: dead, started_at: 1234, port: 1 })}\n`);
    const lock = acquirePidFile(file, { pid: process.pid, started_at: 5678 }, "default");
    expect(lock.crashed).toEqual({ pid: dead, started_at: 1234 });
    lock.release();
    expect(acquirePidFile(file, { pid: process.pid, started_at: 1 }, "default").crashed).toBeNull();
  });
});
