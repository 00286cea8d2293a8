// Fencing of turn leases. Each turn row has a lease epoch: 1 when the turn starts, one more each time
// another process takes it over (a resume) or the reaper interrupts it. A write a running turn makes
// for itself carries the epoch its process holds; each engine compares it with the row's in the same
// transaction, so a process that stalled while another took its turn over changes nothing any more:
// its write is refused whole with code `lease_lost`. The rule is written once here; the engines
// (ops.ts, postgres/pg-ops.ts) only read the row in their own SQL.
import { TenaxError } from "../core/errors.js";
import { StoreError } from "./errors.js";
import type { WriteOp } from "./ops.js";

/** The epoch `turn.start` writes. A row from before fencing (schema < 7 on SQLite, < 3 on PostgreSQL) has 0. */
export const FIRST_EPOCH = 1;

export const LEASE_LOST = "lease_lost";

/** The turn row as the fence sees it: what a takeover or a fenced write compares with. */
export interface LeaseRow {
  status: string;
  lease_epoch: number;
}

/** What a write holds of a turn: the epoch, and for a takeover the status it read. */
export interface LeaseClaim {
  turnId: string;
  /** The epoch the writer holds; undefined: not checked. */
  epoch: number | undefined;
  /** The status the writer read (a takeover's compare-and-set); undefined: not checked. */
  status: string | undefined;
}

/** The claim an op makes on a turn's lease, or null when it makes none (it is not fenced). */
export function leaseClaimOf(op: WriteOp): LeaseClaim | null {
  if (op.op === "message.append") {
    if (op.turn_id === null || op.lease_epoch === undefined) return null;
    return { turnId: op.turn_id, epoch: op.lease_epoch, status: undefined };
  }
  if (op.op === "turn.update") {
    if (op.lease_epoch === undefined && op.expect_status === undefined) return null;
    return { turnId: op.id, epoch: op.lease_epoch, status: op.expect_status };
  }
  return null;
}

/**
 * The refusal of a claim the row does not match, or null when it holds. A turn with no row has no
 * owner to fence against: the write goes on (an update of it then changes nothing).
 */
export function fenceRefusal(claim: LeaseClaim, row: LeaseRow | undefined): StoreError | null {
  if (row === undefined) return null;
  const epochMoved = claim.epoch !== undefined && claim.epoch !== row.lease_epoch;
  const statusMoved = claim.status !== undefined && claim.status !== row.status;
  if (!epochMoved && !statusMoved) return null;
  const held = claim.epoch ?? row.lease_epoch;
  const why = epochMoved
    ? `it holds lease epoch ${held} but the turn is at epoch ${row.lease_epoch} (${row.status})`
    : `it read the turn ${claim.status} but it is ${row.status} now (epoch ${row.lease_epoch})`;
  return new StoreError(
    LEASE_LOST,
    `store: the write for turn ${claim.turnId} was refused and changed nothing: ${why}; another process took the turn over (or ended it) and carries it on`,
    {
      hint: "nothing to do: the process that holds the turn's lease now runs it; this one lets it go",
      data: { turn_id: claim.turnId, held_epoch: held, current_epoch: row.lease_epoch, status: row.status },
    },
  );
}

/** Whether `error` is a fenced write's refusal (from any copy of this module). */
export function isLeaseLost(error: unknown): error is TenaxError {
  return TenaxError.isInstance(error) && error.code === LEASE_LOST;
}

/** The turn, held and current epoch a refusal names (for the store's event and the replay). */
export function leaseLostDetail(error: TenaxError): {
  turn_id: string;
  held_epoch: number;
  current_epoch: number;
} {
  const d = error.data;
  return {
    turn_id: typeof d.turn_id === "string" ? d.turn_id : "",
    held_epoch: typeof d.held_epoch === "number" ? d.held_epoch : -1,
    current_epoch: typeof d.current_epoch === "number" ? d.current_epoch : -1,
  };
}
