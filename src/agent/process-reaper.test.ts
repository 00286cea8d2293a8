// The reaper ends what a dead owner left running, and nothing else: a pid now used by another
// process (same pid, another start time) is never signalled, nor a pid from another boot, nor the
// process of an owner that still runs; records it has settled are deleted, others kept.
import { type ChildProcess, spawn } from "node:child_process";
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { deadPid } from "../../test/helpers/resume.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { waitUntil } from "../../test/helpers/tool-context.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { bootId, identify, isRunning, type ProcessIdentity, selfIdentity } from "./process-identity.js";
import { type OwnerRecord, ownerKey, ownerRecordOp, PROCESS_KIND } from "./process-ledger.js";
import { markEnv } from "./process-marks.js";
import { reapOrphanProcesses } from "./process-reaper.js";

const children: ChildProcess[] = [];
const stores: Store[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const store of stores.splice(0)) await releaseStore(store);
});

/** A real process that nothing in Tenax started, with its identity. */
async function sleeper(seconds: string, env: Record<string, string> = {}): Promise<ProcessIdentity> {
  const child = spawn("sleep", [seconds], { stdio: "ignore", env: { ...process.env, ...env } });
  children.push(child);
  await new Promise((resolve) => child.once("spawn", resolve));
  const id = identify(child.pid as number);
  if (id === null) throw new Error("the sleeper has no identity");
  return id;
}

async function setup() {
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  stores.push(store);
  const reap = () =>
    reapOrphanProcesses({
      store,
      profile: paths.dir,
      self: selfIdentity(),
      bootId: bootId(),
      graceMs: 2_000,
      now: () => Date.now(),
    });
  return { store, profile: paths.dir, reap };
}

function record(
  owner: ProcessIdentity,
  processes: ProcessIdentity[],
  options: { boot?: string | null; profile?: string } = {},
): OwnerRecord {
  return {
    owner,
    boot_id: options.boot === undefined ? bootId() : options.boot,
    profile: options.profile ?? "",
    processes: processes.map((p) => ({
      ...p,
      task_id: "t_test",
      command: `sleep for ${p.pid}`,
      cwd: "/",
      started_at: 0,
    })),
  };
}

async function put(store: Store, key: string, value: OwnerRecord): Promise<void> {
  await store.write([ownerRecordOp(key, value, Date.now())]);
}

describe("reapOrphanProcesses", () => {
  it("never kills a pid reused by another process, a pid of another boot, or a live owner's process", async () => {
    const { store, reap } = await setup();
    const victim = await sleeper("304.1");
    const liveOwner = await sleeper("309.1");
    const gone = { pid: await deadPid(), start: 1 };
    // The recorded process had this pid but started at another time: the pid is someone else's now.
    await put(store, "pid:1", record(gone, [{ pid: victim.pid, start: victim.start + 7 }]));
    // The right identity, but recorded in another boot.
    await put(store, "pid:2", record(gone, [victim], { boot: "another-boot" }));
    // The right identity, of an owner that still runs (a tenax chat beside the gateway).
    await put(store, ownerKey(liveOwner.pid), record(liveOwner, [victim]));

    const report = await reap();
    expect(report.reaped).toEqual([]);
    expect(isRunning(victim)).toBe(true);
    // Records of dead owners are settled; the live owner's is its own to keep.
    expect((await store.listRecords(PROCESS_KIND)).map((r) => r.key)).toEqual([ownerKey(liveOwner.pid)]);
  });

  it("leaves another host's record alone: neither its processes nor the record are this host's to judge", async () => {
    const { store, reap } = await setup();
    const victim = await sleeper("304.3");
    const gone = { pid: await deadPid(), start: 1 };
    // A shared store: the same pid and identity on another host must not be taken for this host's.
    const key = ownerKey(gone.pid, "another-host");
    await put(store, key, { ...record(gone, [victim]), host: "another-host" });
    await put(store, ownerKey(gone.pid, hostname()), { ...record(gone, [victim]), host: hostname() });

    const report = await reap();
    expect(report.reaped.map((r) => r.pid)).toEqual([victim.pid]);
    expect((await store.listRecords(PROCESS_KIND)).map((r) => r.key)).toEqual([key]);
  });

  it("kills a dead owner's recorded process whose pid and start time match, and deletes the record", async () => {
    const { store, reap } = await setup();
    const victim = await sleeper("304.2");
    const gone = { pid: await deadPid(), start: 1 };
    await put(store, ownerKey(gone.pid), record(gone, [victim]));

    const report = await reap();
    expect(report.reaped).toEqual([
      {
        pid: victim.pid,
        task_id: "t_test",
        owner: `${gone.pid}:1`,
        command: `sleep for ${victim.pid}`,
        found: "record",
      },
    ]);
    expect(isRunning(victim)).toBe(false);
    expect(await store.listRecords(PROCESS_KIND)).toEqual([]);
  });

  it("kills a process marked with this profile whose owner is gone, and not one of a live owner or another profile", async () => {
    const { reap, profile } = await setup();
    const gone = { pid: await deadPid(), start: 1 };
    const live = selfIdentity() as ProcessIdentity;
    const liveOwner = await sleeper("309.2");
    const orphan = await sleeper("304.3", markEnv(profile, gone, "t_orphan"));
    const ownersLive = await sleeper("304.4", markEnv(profile, liveOwner, "t_live"));
    const elsewhere = await sleeper("304.5", markEnv(`${profile}-other`, gone, "t_other"));
    const mine = await sleeper("304.6", markEnv(profile, live, "t_mine"));

    const report = await reap();
    expect(report.reaped).toEqual([
      { pid: orphan.pid, task_id: "t_orphan", owner: `${gone.pid}:1`, command: null, found: "mark" },
    ]);
    await waitUntil(() => !isRunning(orphan), 5_000, "the orphan to end");
    for (const spared of [ownersLive, elsewhere, mine]) expect(isRunning(spared)).toBe(true);
  });
});
