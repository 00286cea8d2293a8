// The fetch providers use unless one is injected: undici's own fetch over a shared connection pool
// whose sockets must finish the TCP and TLS handshake within `connect_ms`, so a host that never
// answers fails as a connect timeout long before the first-byte deadline.
import type { Agent } from "undici";
import type { Fetch } from "./sdk-call.js";

/** What undici's ConnectTimeoutError carries, inside fetch's TypeError. */
export const CONNECT_TIMEOUT_CODE = "UND_ERR_CONNECT_TIMEOUT";

// One pool per distinct limit, kept for the life of the process: keep-alive reuse across calls is
// the point, so a call never gets an Agent of its own.
const agents = new Map<number, Agent>();

// undici is loaded with the first call (like the SDKs), not when Tenax starts.
type Undici = { Agent: typeof Agent; fetch: typeof import("undici").fetch };
let loading: Promise<Undici> | null = null;

async function agentFor(connectMs: number): Promise<{ agent: Agent; fetch: Undici["fetch"] }> {
  loading ??= import("undici");
  const undici = await loading;
  let agent = agents.get(connectMs);
  if (agent === undefined) {
    // Headers and body deadlines are our own timers (first_byte_ms, idle_ms), which classify what
    // fired; undici's defaults (300 s) would otherwise cut a longer limit short as an unnamed error.
    agent = new undici.Agent({ connect: { timeout: connectMs }, headersTimeout: 0, bodyTimeout: 0 });
    agents.set(connectMs, agent);
  }
  return { agent, fetch: undici.fetch };
}

/** The shared pool whose connections are opened under `connectMs` (for undici's request API). */
export async function dispatcherFor(connectMs: number): Promise<Agent> {
  return (await agentFor(connectMs)).agent;
}

/**
 * A fetch whose connections are opened under `connectMs`, on a pool shared by every call. undici
 * times the handshake on a coarse clock, so the limit fires up to about a second late.
 */
export function defaultFetch(connectMs: number): Fetch {
  return async (input, init) => {
    // undici cannot read a Request built by Node's bundled copy (a different class), and both
    // SDKs pass a URL, so a Request here is a change worth failing loudly on.
    if (typeof input !== "string" && !(input instanceof URL)) {
      throw new TypeError("the provider fetch takes a URL and options, not a Request");
    }
    const { agent: dispatcher, fetch: undiciFetch } = await agentFor(connectMs);
    // The init and the Response are the same WHATWG shapes under undici's own type declarations.
    const response = await undiciFetch(input, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    });
    return response as unknown as Response;
  };
}

/** Whether an error, or one along its cause chain (fetch nests it in a TypeError), is a connect timeout. */
export function isConnectTimeout(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    if ((current as { code?: unknown }).code === CONNECT_TIMEOUT_CODE) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
