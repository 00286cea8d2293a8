// Property-based fuzzing (fast-check) of every gateway HTTP route, against one real `tenax gateway
// run` process per variant (gateway.api_key set, and auth: none) and an in-process simulator: random
// methods, paths (known routes, percent-encoded junk), headers (auth right, wrong, missing; session,
// idempotency and Last-Event-ID junk; content types; a foreign Origin now and then) and bodies (valid chat requests and mutations of them: wrong
// types, huge strings, deep nesting, unknown fields, invalid UTF-8, non-JSON). Every answer has a
// status documented for its route, every error is the OpenAI shape with a message, no 500 but
// turn_failed, and the process stays up. Seeded: TENAX_SEED=N replays (`seed=N`).
import { request } from "node:http";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";

const SEED = process.env.TENAX_SEED ? Number(process.env.TENAX_SEED) : Math.floor(Math.random() * 2 ** 31);
const RUNS = 500;
const TIME_LIMIT_MS = 35_000;
const KEY = "fuzz-key-0123456789";

beforeAll(() => requireBuild());

// ---- what is documented ------------------------------------------------------------------------

type Route =
  | "live"
  | "health"
  | "metrics"
  | "events"
  | "capabilities"
  | "models"
  | "chat"
  | "runs"
  | "run"
  | "run_events"
  | "run_stop"
  | "sessions"
  | "session"
  | "junk";

/** The statuses each route may answer (beyond 401 for auth and 405 for a method it does not take). */
const DOCUMENTED: Record<Route, number[]> = {
  live: [200],
  health: [200, 503],
  metrics: [200],
  events: [200, 400],
  capabilities: [200],
  models: [200],
  // 404 unknown X-Session-Id or model id, 413 body too large, 415 not application/json, 429 turn
  // limit or the busy session's queue full, 503 draining, 500 only as turn_failed (checked by code
  // below); a failed turn (or model call) is 400, 422, 502 or 503 (src/gateway/failure-status.ts).
  chat: [200, 400, 404, 413, 415, 422, 429, 500, 502, 503],
  runs: [200, 202, 400, 404, 409, 413, 415, 429, 503],
  run: [200, 400, 404],
  run_events: [200, 400, 404],
  run_stop: [200, 202, 400, 404, 409],
  sessions: [200, 400],
  session: [200, 400, 404],
  junk: [400, 404],
};

// ---- generators --------------------------------------------------------------------------------

/** Pools filled as the run goes: real session and run ids, so some requests hit existing ones. */
const pools = { sessions: ["s_unknown"], runs: ["r_unknown"] };
const pick = (pool: string[], n: number) => pool[n % pool.length] ?? "x";

const idJunk = fc.oneof(
  fc.constant("POOL"),
  fc.stringMatching(/^[A-Za-z0-9_.~-]{1,40}$/),
  fc.constantFrom("%", "%zz", "%00", "%C0%AF", "..", "%2F..%2F", "%E2%80%AE", "%F0%9F%92%A9", "a%20b", "-1"),
);
const junkPath = fc.oneof(
  fc.constantFrom(
    "/",
    "//",
    "/v1",
    "/v1/",
    "/api",
    "/v2/chat/completions",
    "/health/live/x",
    "/%",
    "/%%",
    "/?a=%",
  ),
  fc
    .array(fc.stringMatching(/^[A-Za-z0-9%._~!$&'()*+,;=:@-]{0,12}$/), { minLength: 1, maxLength: 4 })
    .map((parts) => `/${parts.join("/")}`),
);
const query = fc.oneof(
  { weight: 4, arbitrary: fc.constant("") },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "?limit=5",
      "?limit=0",
      "?limit=abc&offset=-1",
      "?offset=99999999999999999999",
      "?last_event_id=x",
      "?last_event_id=1",
      "?%=%",
      "?limit=1e3",
    ),
  },
);

interface Target {
  route: Route;
  path: string;
}
const target: fc.Arbitrary<(n: number) => Target> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom<[Route, string]>(
        ["live", "/health/live"],
        ["health", "/health"],
        ["metrics", "/metrics"],
        ["events", "/api/events"],
        ["capabilities", "/api/capabilities"],
        ["models", "/v1/models"],
        ["chat", "/v1/chat/completions"],
        ["chat", "/v1/chat/completions"],
        ["chat", "/v1/chat/completions/"],
        ["runs", "/v1/runs"],
        ["sessions", "/api/sessions"],
      ),
      query,
    )
    .map(([[route, path], q]) => () => ({ route, path: path + q })),
  fc
    .tuple(fc.constantFrom<Route>("run", "run_events", "run_stop", "session"), idJunk, query)
    .map(([route, id, q]) => (n: number) => {
      const real = id === "POOL";
      const value = real ? pick(route === "session" ? pools.sessions : pools.runs, n) : id;
      const base = route === "session" ? `/api/sessions/${value}` : `/v1/runs/${value}`;
      const path = route === "run_events" ? `${base}/events` : route === "run_stop" ? `${base}/stop` : base;
      return { route, path: path + q };
    }),
  junkPath.map((path) => () => ({ route: "junk" as Route, path })),
);

/** The method the route takes, for most requests: so most reach the route, not its 405. */
const NATIVE: Partial<Record<Route, string>> = { chat: "POST", runs: "POST", run_stop: "POST" };
const method = fc.oneof(
  { weight: 8, arbitrary: fc.constant("NATIVE") },
  { weight: 3, arbitrary: fc.constantFrom("GET", "POST") },
  { weight: 1, arbitrary: fc.constantFrom("PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "FOO") },
);

const validChat = fc.record(
  {
    model: fc.constantFrom("x", "sim/echo", ""),
    messages: fc.array(
      fc.record({
        role: fc.constantFrom("user", "system", "assistant"),
        content: fc.string({ maxLength: 40 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    stream: fc.boolean(),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  },
  { requiredKeys: ["messages"] },
);
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double(),
  fc.string({ maxLength: 30 }),
  fc.string({ minLength: 100_000, maxLength: 100_001 }).map((s) => s.repeat(3)),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc
    .integer({ min: 1, max: 2000 })
    .map((depth) => JSON.parse("[".repeat(depth) + "]".repeat(depth)) as unknown),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
);
const mutatedChat = fc
  .tuple(
    validChat,
    fc.constantFrom(
      "model",
      "messages",
      "stream",
      "n",
      "tools",
      "stream_options",
      "unknown_field",
      "messages.0",
      "messages.0.role",
      "messages.0.content",
    ),
    junk,
  )
  .map(([body, where, value]) => {
    const copy = structuredClone(body) as Record<string, unknown>;
    const [head, index, field] = where.split(".");
    const messages = copy.messages as Record<string, unknown>[];
    if (index === undefined) copy[head as string] = value;
    else if (field === undefined) messages[0] = value as Record<string, unknown>;
    else (messages[0] as Record<string, unknown>)[field] = value;
    return copy;
  });
const body: fc.Arbitrary<Buffer | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 4, arbitrary: validChat.map((b) => Buffer.from(JSON.stringify(b))) },
  { weight: 4, arbitrary: mutatedChat.map((b) => Buffer.from(JSON.stringify(b))) },
  { weight: 1, arbitrary: junk.map((j) => Buffer.from(JSON.stringify(j) ?? "undefined")) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)) },
  {
    weight: 1,
    arbitrary: fc
      .string({ maxLength: 20 })
      .map((s) =>
        Buffer.concat([
          Buffer.from(`{"messages":[{"role":"user","content":"${s}`),
          Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
          Buffer.from('"}]}'),
        ]),
      ),
  },
);

const auth = fc.oneof(
  { weight: 4, arbitrary: fc.constant("right") },
  { weight: 1, arbitrary: fc.constantFrom("wrong", "missing", "lowercase-scheme", "no-scheme") },
);
const headerJunk = fc.stringMatching(/^[\x21-\x7e]{0,40}$/);
const headers = fc.record({
  sessionId: fc.option(fc.oneof(fc.constant("POOL"), headerJunk), { freq: 3 }),
  idempotencyKey: fc.option(headerJunk, { freq: 3 }),
  lastEventId: fc.option(
    fc.oneof(headerJunk, fc.constantFrom("0", "1", "-1", "99999999999999999999", "1.5")),
    { freq: 3 },
  ),
  contentType: fc.constantFrom(
    "application/json",
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/json; charset=latin1",
    "",
    "multipart/form-data; boundary=x",
  ),
  // Mostly none (an SDK), sometimes a page's: another origin is refused whatever else is sent.
  origin: fc.oneof(
    { weight: 9, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom("http://127.0.0.2:8000", "null", "https://evil.example") },
  ),
});

const requestArb = fc.record({ target, method, body, auth, headers, pickIndex: fc.nat() });
type FuzzRequest = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

// ---- sending one request -----------------------------------------------------------------------

interface Answer {
  status: number;
  contentType: string;
  body: string;
  sessionId: string | undefined;
}

/** One request over a real socket; an SSE answer is cut after its first bytes. */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | null,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    // A body always goes with its length, as clients send it (a GET body without one would be
    // read as the start of the next request: Node's own 400, before the gateway sees anything).
    const framed = body === null ? headers : { ...headers, "content-length": String(body.length) };
    const req = request(
      { host: url.hostname, port: url.port, method, path, headers: framed, timeout: 30_000 },
      (res) => {
        const contentType = String(res.headers["content-type"] ?? "");
        const chunks: Buffer[] = [];
        const done = () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType,
            body: Buffer.concat(chunks).toString("utf8"),
            sessionId: res.headers["x-session-id"] as string | undefined,
          });
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          if (contentType.startsWith("text/event-stream")) {
            res.destroy();
            done();
          }
        });
        res.on("end", done);
        res.on("error", () => done());
        // An SSE stream that says nothing at first is cut too: the headers are what is checked.
        if (contentType.startsWith("text/event-stream"))
          setTimeout(() => {
            res.destroy();
            done();
          }, 300);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer to ${method} ${path} in 30 s`)));
    req.on("error", reject);
    req.end(body ?? undefined);
  });
}

function headersFor(r: FuzzRequest): Record<string, string> {
  const h: Record<string, string> = {};
  if (r.auth === "right") h.authorization = `Bearer ${KEY}`;
  if (r.auth === "wrong") h.authorization = "Bearer not-the-key";
  if (r.auth === "lowercase-scheme") h.authorization = `bearer ${KEY}`;
  if (r.auth === "no-scheme") h.authorization = KEY;
  const { sessionId, idempotencyKey, lastEventId, contentType, origin } = r.headers;
  if (origin !== null) h.origin = origin;
  if (sessionId !== null)
    h["x-session-id"] = sessionId === "POOL" ? pick(pools.sessions, r.pickIndex) : sessionId;
  if (idempotencyKey !== null) h["idempotency-key"] = idempotencyKey;
  if (lastEventId !== null) h["last-event-id"] = lastEventId;
  if (contentType !== "") h["content-type"] = contentType;
  return h;
}

/** What is wrong with an answer; [] when it keeps every promise. */
function problems(r: FuzzRequest, t: Target, a: Answer, keySet: boolean): string[] {
  const out: string[] = [];
  const authorized = !keySet || r.auth === "right" || r.auth === "lowercase-scheme";
  const allowed = new Set([...DOCUMENTED[t.route], 405]);
  if (keySet && t.route !== "live") allowed.add(401);
  // A request Node's HTTP parser refuses (an unknown method, say) is a 400 on any path.
  if (r.method === "FOO") allowed.add(400);
  // A foreign Origin is refused before anything else, on every route.
  if (r.headers.origin !== null) {
    if (a.status !== 403 && r.method !== "FOO")
      out.push(`${a.status} for Origin ${r.headers.origin}, not 403`);
    return out;
  }
  if (!allowed.has(a.status)) out.push(`status ${a.status} is not documented for ${t.route}`);
  if (a.status === 401 && authorized) out.push("401 with the right key (or with no key configured)");
  if (keySet && !authorized && t.route !== "live" && ![400, 401].includes(a.status))
    out.push(`${a.status} without the right key`);
  if (t.route === "chat" && a.status === 200 && !a.sessionId) out.push("a chat answer without X-Session-Id");
  if (a.status >= 400 && r.method !== "HEAD") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(a.body);
    } catch {
      out.push(`error body is not JSON: ${a.body.slice(0, 200)}`);
    }
    const error = (parsed as { error?: { message?: unknown; type?: unknown; code?: unknown } } | undefined)
      ?.error;
    if (
      parsed !== undefined &&
      !(
        typeof error?.message === "string" &&
        error.message.length > 0 &&
        typeof error.type === "string" &&
        typeof error.code === "string"
      )
    )
      out.push(`error body is not the OpenAI shape: ${a.body.slice(0, 200)}`);
    if (r.method === "FOO" && error?.code !== "invalid_http")
      out.push(`method FOO answered ${a.body.slice(0, 200)}`);
    if (a.status === 500 && error?.code !== "turn_failed")
      out.push(`an undocumented 500: ${a.body.slice(0, 300)}`);
  }
  return out;
}

async function fuzz(
  gw: GatewayProcess,
  keySet: boolean,
): Promise<{ runs: number; statuses: Record<number, number> }> {
  const statuses: Record<number, number> = {};
  const found: string[] = [];
  let sent = 0;
  const details = await fc.check(
    fc.asyncProperty(requestArb, async (r) => {
      const t = r.target(r.pickIndex);
      const verb = r.method === "NATIVE" ? (NATIVE[t.route] ?? "GET") : r.method;
      const t0 = performance.now();
      const a = await send(gw.url, verb, t.path, headersFor(r), r.body);
      // Every answer comes promptly (a turn against the simulator is milliseconds): an SSE route
      // that held its headers back would show here.
      const took = performance.now() - t0;
      sent++;
      statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      if (a.sessionId && a.status === 200 && !pools.sessions.includes(a.sessionId))
        pools.sessions.push(a.sessionId);
      const runId = /"run_id":"([^"]+)"/.exec(a.body)?.[1];
      if (runId && !pools.runs.includes(runId)) pools.runs.push(runId);
      const bad = [...problems(r, t, a, keySet), ...(took > 10_000 ? [`took ${Math.round(took)} ms`] : [])];
      if (bad.length > 0) found.push(`${verb} ${t.path} -> ${a.status}: ${bad.join("; ")}`);
      // The process stays up and its liveness route answers, every 50 requests and at the end.
      if (sent % 50 === 0) await expectAlive(gw);
      expect(bad).toEqual([]);
    }),
    {
      seed: SEED,
      numRuns: RUNS,
      endOnFailure: true,
      interruptAfterTimeLimit: TIME_LIMIT_MS,
      markInterruptAsFailure: false,
    },
  );
  // The request that failed is in `found` (the counterexample itself may hold 300 kB of body).
  if (details.failed)
    throw new Error(
      `gateway fuzz failed (seed=${SEED}, path=${details.counterexamplePath}): ${found.slice(0, 5).join("\n") || String(details.errorInstance)}`,
    );
  await expectAlive(gw);
  return { runs: details.numRuns, statuses };
}

async function expectAlive(gw: GatewayProcess): Promise<void> {
  expect(gw.child.exitCode, gw.stderr()).toBeNull();
  const live = await send(gw.url, "GET", "/health/live", {}, null);
  expect(live.status).toBe(200);
}

describe("the gateway under fuzzing", () => {
  it.each([
    ["with gateway.api_key set", true],
    ["with auth: none", false],
  ])(
    "answers every request with a documented status and error shape, %s, and stays up",
    async (_name, keySet) => {
      console.log(`gateway fuzz seed=${SEED}`);
      const { home } = await simProfile(keySet ? `api_key: "${KEY}"` : "auth: none");
      const gw = await startGateway(home);
      const { runs, statuses } = await fuzz(gw, keySet);
      console.log(
        `gateway fuzz seed=${SEED} (${keySet ? "key" : "auth: none"}): ${runs} requests, statuses ${JSON.stringify(statuses)}`,
      );
      // Enough of it ran to mean something, and both sides were met: answers and refusals.
      expect(runs).toBeGreaterThanOrEqual(100);
      expect(statuses[200] ?? 0).toBeGreaterThan(0);
      expect(statuses[400] ?? 0).toBeGreaterThan(0);
      if (keySet) expect(statuses[401] ?? 0).toBeGreaterThan(0);
      expect(statuses[403] ?? 0).toBeGreaterThan(0);
      expect(statuses[415] ?? 0).toBeGreaterThan(0);
    },
    90_000,
  );
});

// Counterexamples the fuzzer found, kept as plain regression tests.
describe("the gateway: what fuzzing found", () => {
  it("answers an offset too large for SQLite with a 400, a request Node cannot parse in the OpenAI shape, and opens the event feed at once", async () => {
    const { home } = await simProfile();
    const gw = await startGateway(home);
    // Was a 500 "datatype mismatch": 1e20 is an integer to JavaScript, not to SQLite.
    const huge = await send(gw.url, "GET", "/api/sessions?offset=99999999999999999999", gw.auth, null);
    expect(huge.status).toBe(400);
    expect(JSON.parse(huge.body)).toMatchObject({
      error: { code: "invalid_query", type: "invalid_request_error" },
    });
    // Was Node's bare 400 with an empty body: an unknown method never reaches a route.
    const foo = await send(gw.url, "FOO", "/v1/models", gw.auth, null);
    expect(foo.status).toBe(400);
    expect(JSON.parse(foo.body)).toMatchObject({
      error: { code: "invalid_http", type: "invalid_request_error" },
    });
    expect(JSON.parse(foo.body).error.message).toMatch(/not valid HTTP \(HPE_INVALID_METHOD\)/);
    // Was a 15 s wait: the event feed held its headers back until its first keep-alive.
    const started = performance.now();
    const events = await send(gw.url, "GET", "/api/events", gw.auth, null);
    expect(events.status).toBe(200);
    expect(events.contentType).toMatch(/^text\/event-stream/);
    expect(performance.now() - started).toBeLessThan(3000);
    await expectAlive(gw);
  });
});
