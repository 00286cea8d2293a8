// The runs API as a client sees it over HTTP: submit a run, read its state, read (and resume) its
// event stream. Shared by the tests of one gateway and of several on one store.
import { expect } from "vitest";
import type { GatewayProcess } from "./gateway.js";

export interface SseEvent {
  id: number;
  event: string;
  data: { type: string } & Record<string, unknown>;
}

export interface RunView {
  object: string;
  run_id: string;
  session_id: string;
  turn_id: string | null;
  status: string;
  reply: string;
  partial: boolean;
  error: { message: string; type: string; code: string; layer: string | null } | null;
  last_event_id: number;
}

export const user = (content: string) => JSON.stringify({ messages: [{ role: "user", content }] });

export const submit = (gw: GatewayProcess, body: string, headers: Record<string, string> = {}) =>
  gw.fetch("/v1/runs", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

export async function started(response: Response): Promise<RunView> {
  expect(response.status).toBe(202);
  return (await response.json()) as RunView;
}

export const state = async (gw: GatewayProcess, id: string) =>
  (await (await gw.fetch(`/v1/runs/${id}`)).json()) as RunView;

/**
 * Read a run's SSE stream: until it ends, or (with `stopAfter`) abort the connection once that many
 * events came. Returns the events and whether the server ended the stream itself.
 */
export async function readEvents(
  gw: GatewayProcess,
  runId: string,
  options: { after?: number; stopAfter?: number; query?: boolean } = {},
): Promise<{ events: SseEvent[]; ended: boolean; keepalives: number }> {
  const controller = new AbortController();
  const headers: Record<string, string> = {};
  let target = `/v1/runs/${runId}/events`;
  if (options.after !== undefined) {
    if (options.query) target += `?last_event_id=${options.after}`;
    else headers["last-event-id"] = String(options.after);
  }
  const response = await gw.fetch(target, { headers, signal: controller.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/event-stream");
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = "";
  let keepalives = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { events, ended: true, keepalives };
    buffer += decoder.decode(value, { stream: true });
    let cut = buffer.indexOf("\n\n");
    while (cut >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      cut = buffer.indexOf("\n\n");
      if (frame.startsWith(":")) {
        keepalives++;
        continue;
      }
      const field = (name: string) =>
        frame
          .split("\n")
          .find((l) => l.startsWith(`${name}: `))
          ?.slice(name.length + 2);
      events.push({
        id: Number(field("id")),
        event: field("event") ?? "",
        data: JSON.parse(field("data") ?? "null"),
      });
      if (options.stopAfter !== undefined && events.length >= options.stopAfter) {
        controller.abort();
        await reader.cancel().catch(() => {});
        return { events, ended: false, keepalives };
      }
    }
  }
}
