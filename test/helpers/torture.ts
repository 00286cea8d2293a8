// What the torture tests share: a printed, replayable seed, one chat turn through a gateway with
// X-Session-Id continuity, latency percentiles, and the store checks every torture test ends with.
import { expect } from "vitest";
import { RESUME_NOTE } from "../../src/agent/turn-resume.js";
import type { StoreReads } from "../../src/store/port.js";
import type { MessageView, TurnView } from "../../src/store/rows.js";
import type { GatewayProcess } from "./gateway.js";

/**
 * TENAX_SEED from the environment replays a run; otherwise a fresh seed. Printed first, as
 * `seed=N`, so a failing run can be replayed.
 */
export function tortureSeed(what: string): number {
  const raw = process.env.TENAX_SEED;
  const seed = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : Math.floor(Math.random() * 2 ** 31);
  console.log(`${what}: seed=${seed} (replay with TENAX_SEED=${seed})`);
  return seed;
}

export interface ChatAnswer {
  status: number;
  /** The session the gateway answered for (X-Session-Id), null when it did not say. */
  sessionId: string | null;
  /** The reply of a 200, else the error message. */
  reply: string;
  /** The error's code when the turn failed (the classified reason, a guardrail's code, ...). */
  code: string | null;
  /** The turn of a 200 and how it ended, as the gateway's `tenax` field says. */
  turn: { id: string; status: string } | null;
  ms: number;
}

/**
 * One non-streamed turn through POST /v1/chat/completions, continuing `sessionId` when given.
 * Rejects when the connection fails (a gateway that died under it): the turn was not acknowledged.
 */
export async function chatTurn(
  gateway: Pick<GatewayProcess, "fetch">,
  text: string,
  sessionId: string | null,
): Promise<ChatAnswer> {
  const started = performance.now();
  const response = await gateway.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...(sessionId ? { "x-session-id": sessionId } : {}) },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  });
  const body = (await response.json()) as {
    choices?: { message?: { content?: string | null } }[];
    error?: { message?: string; code?: string };
    tenax?: { turn_id: string; status: string };
  };
  return {
    status: response.status,
    sessionId: response.headers.get("x-session-id"),
    reply:
      response.status === 200 ? (body.choices?.[0]?.message?.content ?? "") : (body.error?.message ?? ""),
    code: body.error?.code ?? null,
    turn: body.tenax ? { id: body.tenax.turn_id, status: body.tenax.status } : null,
    ms: performance.now() - started,
  };
}

/**
 * An error with the causes it wraps ("fetch failed: ECONNRESET read ECONNRESET"): fetch's own
 * message never says whether the connection was refused, reset or timed out.
 */
export function errorChain(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error; e !== undefined && e !== null && parts.length < 4; ) {
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    parts.push(
      [typeof code === "string" ? code : "", typeof message === "string" ? message : String(e)]
        .join(" ")
        .trim(),
    );
    e = typeof e === "object" ? cause : undefined;
  }
  return parts.join(": ");
}

/** The p-th percentile (0..100) of some numbers, nearest rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** A reply that ends a turn: an assistant message that calls no tool. */
export function isFinalReply(m: MessageView): boolean {
  return m.role === "assistant" && (m.tool_calls === null || m.tool_calls.length === 0);
}

export const isResumeNote = (m: { role: string; content: unknown }) =>
  m.role === "user" && m.content === RESUME_NOTE;

/**
 * Every session of the store is consistent: message seqs contiguous, no turn running, at most
 * three interruptions per turn, at most one final reply per turn, a resume note only for a turn
 * that was interrupted, and every turn with messages starts with its user's message. Returns the
 * figures counted.
 */
export async function expectConsistent(reader: StoreReads): Promise<{
  sessions: number;
  messages: number;
  turns: TurnView[];
}> {
  const sessions = await reader.listSessions({ limit: 10_000 });
  let messages = 0;
  const turns: TurnView[] = [];
  for (const session of sessions) {
    const stored = await reader.getMessages(session.id);
    messages += stored.length;
    const seqs = stored.map((m) => m.seq);
    const first = seqs[0] ?? 0;
    expect(seqs, `session ${session.id}: seq is contiguous`).toEqual(seqs.map((_, i) => first + i));
    for (const turn of await reader.getTurns(session.id)) {
      turns.push(turn);
      expect(turn.status, `turn ${turn.id} is settled`).not.toBe("running");
      expect(turn.interrupt_count, `turn ${turn.id} interrupts`).toBeLessThanOrEqual(3);
      const own = stored.filter((m) => m.turn_id === turn.id);
      expect(own.filter(isFinalReply).length, `turn ${turn.id}: final replies`).toBeLessThanOrEqual(1);
      expect(own.filter(isResumeNote).length, `turn ${turn.id}: resume notes`).toBeLessThanOrEqual(
        turn.interrupt_count,
      );
      const spoken = own.filter((m) => m.role === "user" || m.role === "assistant" || m.role === "tool");
      if (spoken.length > 0) expect(spoken[0]?.role, `turn ${turn.id} starts with its question`).toBe("user");
    }
  }
  return { sessions: sessions.length, messages, turns };
}
