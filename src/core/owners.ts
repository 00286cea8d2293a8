// Who holds a lease or a claim, and whether a holder has ended: one answer for every layer that
// leases (turns, cron's claims, the outbox, the breaker's probes), so none of them looks a holder
// up on its own. Two kinds of holders:
// - on one host (the SQLite store), a process: `pid:N@START` (claims and leases) or `pid:N` (a
//   turn's lease), gone when this host's /proc no longer has it (a reused pid is told apart by its
//   start time where the tag has one);
// - across hosts (the PostgreSQL store), an instance of the store's instance registry
//   (`inst:ID`), judged by the registry's rule (store/instances.ts); a process tag there may name
//   a process of another host, which /proc here cannot see: it is unknown, never gone.
import { pidAlive } from "./process-identity.js";
import { ownerAlive, ownerGone, ownerOf } from "./process-owner.js";

/**
 * mine: this process; alive: another holder known to run; gone: known to have ended (what it
 * held may be taken at once); unknown: cannot be told from here (its lease has to run out).
 */
export type OwnerState = "mine" | "alive" | "gone" | "unknown";

export interface Owners {
  /** This process's tag, written as the holder of what it claims or leases. */
  readonly self: string;
  /** The tag a turn's lease names this process by (`pid:N` on one host, as turns always had). */
  readonly turnOwner: string;
  state(owner: string): OwnerState;
  /**
   * This host's clock minus the clock leases are written and judged in: the database's on a
   * shared store (measured by the instance registry's heartbeat), so hosts whose clocks disagree
   * agree on when a lease ends; 0 on one host.
   */
  skewMs(): number;
}

/** Now, in the clock leases are written and judged in (see Owners.skewMs). */
export const leaseNow = (owners: Owners, localNow: number): number => localNow - owners.skewMs();

/** Whether the holder a tag names is known to have ended. */
export const ownerIsGone = (owners: Owners, owner: string | null): boolean =>
  owner !== null && owners.state(owner) === "gone";

const TURN_TAG = /^pid:(\d+)$/;

/** The pid of a turn's lease owner written as "pid:N", or null. */
export function turnOwnerPid(owner: string | null): number | null {
  const match = TURN_TAG.exec(owner ?? "");
  return match ? Number(match[1]) : null;
}

/** A process tag of this host, judged by /proc: a turn's `pid:N`, or a claim's `pid:N@START`. */
export function processState(owner: string): Exclude<OwnerState, "mine"> {
  const pid = turnOwnerPid(owner);
  if (pid !== null) return pidAlive(pid) ? "alive" : "gone";
  if (ownerGone(owner)) return "gone";
  return ownerAlive(owner) ? "alive" : "unknown";
}

/** The processes of this host: what a profile on one machine (SQLite) has always used. */
export function localOwners(): Owners {
  const self = ownerOf();
  const turnOwner = `pid:${process.pid}`;
  return {
    self,
    turnOwner,
    state: (owner) => (owner === self || owner === turnOwner ? "mine" : processState(owner)),
    skewMs: () => 0,
  };
}
