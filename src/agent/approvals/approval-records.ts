// How an approval is kept: one durable record per request to run something the exec policy holds
// back (kind "approval", key the approval id, carrying its session so deleting the session deletes
// it). It says what was asked (tool, command, why), who asked, until when, and once decided, the
// decision and who made it. What is read back is checked; a record that fails is treated as absent.
import { z } from "zod";
import type { StoreReads } from "../../store/port.js";

export const APPROVAL_KIND = "approval";
/**
 * The index of what is pending (kind "approval_pending", key the approval id), written in the
 * same transaction as the record: /health and the expiry sweep read it without parsing every
 * decision ever kept.
 */
export const APPROVAL_PENDING_KIND = "approval_pending";

/** `cancelled`: the turn that asked was stopped or interrupted before anyone answered. */
export const approvalStatus = z.enum(["pending", "approved", "denied", "expired", "cancelled"]);

/**
 * What an approver may answer: once, no, always for this session, or always for this pattern
 * (added to the profile's `tools.exec.allow`).
 */
export const approvalDecision = z.enum(["approve", "deny", "session", "always"]);

const danger = z.object({ rule: z.string(), text: z.string(), why: z.string() });

// Not strict: a record written by a newer Tenax with more fields still reads.
export const approvalRecord = z.object({
  approval_id: z.string(),
  session_id: z.string(),
  turn_id: z.string(),
  /** The tool call that waits on it: a resumed turn finds its approval by this id. */
  tool_call_id: z.string(),
  tool: z.string(),
  command: z.string(),
  /** Why the policy held it back, in one sentence. */
  reason: z.string(),
  dangers: z.array(danger),
  /** What "always" adds to tools.exec.allow. */
  pattern: z.string(),
  /** Who asked: the turn's channel ("runs API, run run_...", "tenax chat, pid 123"). */
  requested_by: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
  status: approvalStatus,
  decision: approvalDecision.nullable(),
  decided_by: z.string().nullable(),
  decided_at: z.number().nullable(),
});

export type ApprovalStatus = z.infer<typeof approvalStatus>;
export type ApprovalDecision = z.infer<typeof approvalDecision>;
export type ApprovalRecord = z.infer<typeof approvalRecord>;

type RecordSource = Pick<StoreReads, "listRecords" | "getRecord">;

export async function readApproval(store: RecordSource, approvalId: string): Promise<ApprovalRecord | null> {
  const parsed = approvalRecord.safeParse(await store.getRecord(APPROVAL_KIND, approvalId));
  return parsed.success ? parsed.data : null;
}

/** Every stored approval (optionally one session's), oldest first. */
export async function listApprovals(store: RecordSource, sessionId?: string): Promise<ApprovalRecord[]> {
  const records = await store.listRecords(APPROVAL_KIND, sessionId === undefined ? {} : { sessionId });
  return records
    .flatMap((record) => {
      const parsed = approvalRecord.safeParse(record.value);
      return parsed.success ? [parsed.data] : [];
    })
    .sort((a, b) => a.created_at - b.created_at);
}

/** The records the pending index names that are still pending in their record, oldest first. */
export async function listPendingApprovals(store: RecordSource): Promise<ApprovalRecord[]> {
  const pending: ApprovalRecord[] = [];
  for (const entry of await store.listRecords(APPROVAL_PENDING_KIND)) {
    const record = await readApproval(store, entry.key);
    if (record?.status === "pending") pending.push(record);
  }
  return pending.sort((a, b) => a.created_at - b.created_at);
}

/** A record still pending at `now` is pending; one past its expiry reads as what it becomes. */
export function effectiveStatus(record: ApprovalRecord, now: number): ApprovalStatus {
  return record.status === "pending" && now >= record.expires_at ? "expired" : record.status;
}
