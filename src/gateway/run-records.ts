// How the runs API keeps its data in the store's records table: a run's state (kind "run", key the
// run id), its events (kind "run_event", key "RUN_ID/0000000001", so they sort in order) and its
// Idempotency-Key (kind "run_idem"). Every record carries the run's session, so deleting the
// session deletes them all. What is read back is checked; a record that fails is treated as absent.
import { z } from "zod";
import type { RecordClaimOp, RecordPutOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";

export const RUN_KIND = "run";
export const RUN_EVENT_KIND = "run_event";
export const RUN_IDEM_KIND = "run_idem";
/** A stop asked of a queued run by a gateway other than the one it waits on (key the run id). */
export const RUN_STOP_KIND = "run_stop";
export const FINISHED = "run.finished";

/** `queued`: waiting behind its session's running turn (gateway.session_queue). */
const status = z.enum(["queued", "running", "completed", "interrupted", "failed", "suspended"]);

/**
 * Why a run did not complete: the error a chat completion of the same turn would answer with
 * (message, type, code), with the layer that gave up and the next step.
 */
const runError = z.object({
  message: z.string(),
  type: z.string(),
  code: z.string(),
  layer: z.string().nullable(),
  next: z.string().nullable(),
  retry_after_ms: z.number().nullable(),
});

/** A record written before errors were structured holds the message alone. */
const storedError = z.preprocess(
  (value) =>
    typeof value === "string"
      ? {
          message: value,
          type: "server_error",
          code: "turn_failed",
          layer: null,
          next: null,
          retry_after_ms: null,
        }
      : value,
  runError.nullable(),
);

// Not strict: a record written by a newer Tenax with more fields still reads.
const runState = z.object({
  run_id: z.string(),
  session_id: z.string(),
  turn_id: z.string().nullable(),
  status,
  created_at: z.number(),
  /** When its turn started (a queued run starts later than it was created); older records lack it. */
  started_at: z.number().nullable().default(null),
  ended_at: z.number().nullable(),
  /** The final reply once the run ended; what was said so far while it runs. */
  reply: z.string(),
  partial: z.boolean(),
  error: storedError,
  /** The id of the newest event committed; a client resumes after it. */
  last_event_id: z.number().int().min(0),
  /** The Idempotency-Key the run was submitted with, so pruning the run frees the key. */
  idempotency_key: z.string().nullable(),
  /**
   * Who runs it (core/owners.ts: a gateway process, or an instance on a shared store): another
   * gateway leaves a live owner's run alone and settles a gone one's. Older records lack it.
   */
  owner: z.string().nullable().default(null),
});

const runEvent = z.object({
  id: z.number().int().min(1),
  type: z.string(),
  /** Always carries `type` too, so the data of an event stands alone. */
  data: z.looseObject({ type: z.string() }),
});

const idemRecord = z.object({
  run_id: z.string(),
  fingerprint: z.string(),
  /** When a gateway claimed the key before starting its run (absent once the run is committed). */
  claimed_at: z.number().optional(),
});

/** An Idempotency-Key claimed in the store before its run starts, so gateways start one run per key. */
export function idemClaimOp(
  key: string,
  idem: IdemRecord,
  expect: string | null,
  now: number,
): RecordClaimOp {
  return {
    op: "record.claim",
    kind: RUN_IDEM_KIND,
    key,
    session_id: null,
    value: JSON.stringify(idem),
    expect,
    updated_at: now,
  };
}

export type RunStatus = z.infer<typeof status>;
export type RunError = z.infer<typeof runError>;
/** What GET /v1/runs/ID answers (less the key); also the value of the run's record. */
export type RunState = z.infer<typeof runState>;
export type RunEvent = z.infer<typeof runEvent>;
export type IdemRecord = z.infer<typeof idemRecord>;

/** How a run ended; `run.finished` carries it. */
export interface RunOutcome {
  status: Exclude<RunStatus, "running" | "queued">;
  reply: string;
  partial: boolean;
  error: RunError | null;
}

/** Zero-padded, so the keys of one run sort in event order. */
export const eventKey = (runId: string, id: number) => `${runId}/${String(id).padStart(10, "0")}`;

/** A put of one of a run's records (null deletes it: a tombstone until the session goes). */
export function putOp(
  kind: string,
  key: string,
  sessionId: string,
  value: unknown,
  now: number,
): RecordPutOp {
  return {
    op: "record.put",
    kind,
    key,
    session_id: sessionId,
    value: value === null ? null : JSON.stringify(value),
    updated_at: now,
  };
}

export async function readRun(store: StorePort, runId: string): Promise<RunState | null> {
  return check(runState, await store.getRecord(RUN_KIND, runId));
}

/** Every stored run, or one session's. */
export async function listRuns(store: StorePort, sessionId?: string): Promise<RunState[]> {
  return (await store.listRecords(RUN_KIND, sessionId === undefined ? {} : { sessionId })).flatMap(
    (r) => check(runState, r.value) ?? [],
  );
}

export async function readIdem(store: StorePort, key: string): Promise<IdemRecord | null> {
  return check(idemRecord, await store.getRecord(RUN_IDEM_KIND, key));
}

/** Every stored event of a run with an id above `after`, in order. */
export async function readEvents(store: StorePort, run: RunState, after: number): Promise<RunEvent[]> {
  const prefix = `${run.run_id}/`;
  return (await store.listRecords(RUN_EVENT_KIND, { sessionId: run.session_id }))
    .flatMap((r) => (r.key.startsWith(prefix) ? (check(runEvent, r.value) ?? []) : []))
    .filter((e) => e.id > after)
    .sort((a, b) => a.id - b.id);
}

function check<T>(schema: z.ZodType<T>, value: unknown): T | null {
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : null;
}
