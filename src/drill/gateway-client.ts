// What the drill asks of a running gateway over HTTP: a chat turn, the live event feed, /health and
// a session's state, each bounded by the scenario's signal, each with the gateway's API key.

/** A gateway to call: where it listens and the key it wants (none under gateway.auth: none). */
export interface GatewayEndpoint {
  url: string;
  key: string | undefined;
}

function auth(gateway: GatewayEndpoint): Record<string, string> {
  return gateway.key === undefined ? {} : { authorization: `Bearer ${gateway.key}` };
}

export interface ChatAnswer {
  status: number;
  sessionId: string | null;
  body: unknown;
}

export async function chat(
  gateway: GatewayEndpoint,
  text: string,
  signal: AbortSignal,
  sessionId?: string,
): Promise<ChatAnswer> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...auth(gateway),
      ...(sessionId ? { "x-session-id": sessionId } : {}),
    },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
    signal,
  });
  return {
    status: response.status,
    sessionId: response.headers.get("x-session-id"),
    body: await response.json(),
  };
}

export interface FeedEvent {
  type: string;
  layer?: string;
  session_id?: string;
  data?: Record<string, unknown>;
  message?: string;
}

/** The first event of this type on GET /api/events (a new client is sent the events held). */
export async function feedEvent(
  gateway: GatewayEndpoint,
  type: string,
  signal: AbortSignal,
): Promise<FeedEvent> {
  const controller = new AbortController();
  const both = AbortSignal.any([signal, controller.signal]);
  try {
    const response = await fetch(`${gateway.url}/api/events`, { headers: auth(gateway), signal: both });
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      const match = new RegExp(`event: ${type}\\ndata: (.*)\\n`).exec(text);
      if (match?.[1]) return JSON.parse(match[1]) as FeedEvent;
    }
    throw new Error(`the event feed ended without a ${type} event`);
  } finally {
    controller.abort();
  }
}

/** The feed followed from now to the signal's end: every event seen, each also handed to `onEvent`. */
export interface FeedFollower {
  events(): FeedEvent[];
}

export function followFeed(
  gateway: GatewayEndpoint,
  signal: AbortSignal,
  onEvent: (event: FeedEvent) => void = () => {},
): FeedFollower {
  const seen: FeedEvent[] = [];
  const read = async () => {
    const response = await fetch(`${gateway.url}/api/events`, { headers: auth(gateway), signal });
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      // One SSE block per event, ended by a blank line; a keep-alive comment has no data line.
      for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
        const data = /^data: (.*)$/m.exec(text.slice(0, end))?.[1];
        text = text.slice(end + 2);
        if (data === undefined) continue;
        const event = JSON.parse(data) as FeedEvent;
        seen.push(event);
        onEvent(event);
      }
    }
  };
  // The feed ends with the scenario (its signal) or the gateway; what was seen is what counts.
  void read().catch(() => {});
  return { events: () => [...seen] };
}

export interface HealthReport {
  status: string;
  components: Record<string, { status: string; detail?: string }>;
}

export async function health(gateway: GatewayEndpoint, signal: AbortSignal): Promise<HealthReport> {
  const response = await fetch(`${gateway.url}/health`, { headers: auth(gateway), signal });
  return (await response.json()) as HealthReport;
}

export async function sessionRunning(
  gateway: GatewayEndpoint,
  sessionId: string,
  signal: AbortSignal,
): Promise<boolean> {
  const response = await fetch(`${gateway.url}/api/sessions/${sessionId}`, {
    headers: auth(gateway),
    signal,
  });
  const body = (await response.json()) as { running?: boolean };
  return body.running === true;
}

/** Poll until `what` holds; rejects when the signal (the scenario's deadline) ends first. */
export async function until(
  what: () => boolean | Promise<boolean>,
  signal: AbortSignal,
  everyMs = 25,
): Promise<void> {
  while (!(await what())) {
    signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
