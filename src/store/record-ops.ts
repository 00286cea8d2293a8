// Building writes to the records table and reading their refusal, for every layer that keeps
// durable records (cron, the chat platforms): a put (the newest updated_at wins), a claim (only
// over the text the writer read), and the lease margin of an attempt leased by a claim.
import { TenaxError } from "../core/errors.js";
import { ownerGone } from "../core/process-owner.js";
import type { RecordClaimOp, RecordPutOp } from "./ops.js";

/**
 * An attempt leased by a claim holds it for its timeout plus this, so a slow attempt is never
 * taken over by another process while it may still succeed.
 */
export const LEASE_MARGIN_MS = 30_000;

/**
 * When a record with `next_at` may be taken: then, or now when a lease holds it whose holder
 * (`leased_by`, an ownerOf tag) is known to have ended, so a process killed mid-attempt does not
 * keep its entry for the lease's full length after a restart.
 */
export function dueAt(record: { next_at: number; leased_by?: string | undefined }, now: number): number {
  return record.leased_by !== undefined && record.next_at > now && ownerGone(record.leased_by)
    ? now
    : record.next_at;
}

/** A record written whatever was there (newest updated_at wins); value null deletes it. */
export function putOp(kind: string, key: string, value: unknown, at: number): RecordPutOp {
  return {
    op: "record.put",
    kind,
    key,
    session_id: null,
    value: value === null ? null : JSON.stringify(value),
    updated_at: at,
  };
}

/**
 * A record written only if it is still `expect` (null: absent), compared as the JSON text the
 * store holds; the write is refused with `record_conflict` otherwise.
 */
export function claimOp(
  kind: string,
  key: string,
  value: unknown,
  expect: string | null,
  at: number,
): RecordClaimOp {
  return {
    op: "record.claim",
    kind,
    key,
    session_id: null,
    value: JSON.stringify(value),
    expect,
    updated_at: at,
  };
}

/** Whether a write was refused because a claimed record changed since it was read. */
export function isRecordConflict(error: unknown): boolean {
  return TenaxError.isInstance(error) && error.code === "record_conflict";
}
