// What a gateway's /api/events has sent once it falls quiet: its replay of recent events and
// whatever follows, read until no byte arrived for `quietMs`. The pending read races the quiet
// timer: awaiting the read first would wait for a next event that may never come.
import { expect } from "vitest";
import type { GatewayProcess } from "./gateway.js";

export async function feedText(
  gw: GatewayProcess,
  headers: Record<string, string>,
  quietMs = 700,
): Promise<string> {
  const stop = new AbortController();
  const response = await fetch(`${gw.url}/api/events`, { headers, signal: stop.signal });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  let pending = reader.read();
  for (;;) {
    const quiet = new Promise<null>((resolve) => setTimeout(() => resolve(null), quietMs));
    const next = await Promise.race([pending, quiet]);
    if (next === null || next.done) break;
    text += decoder.decode(next.value, { stream: true });
    pending = reader.read();
  }
  stop.abort();
  return text;
}
