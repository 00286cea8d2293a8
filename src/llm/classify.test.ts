import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { NOW, ROWS } from "../../test/fixtures/classify-fixtures.js";
import type { ClassifiedError, ErrorReason, ProviderFailure } from "./classified-error.js";
import { ERROR_REASONS } from "./classified-error.js";
import { classify, MESSAGE_MAX_CHARS, redact } from "./classify.js";
import { REASON_FLAGS, RULES } from "./classify-rules.js";
import { parseDuration } from "./retry-after.js";
import { RETRY_POLICY } from "./retry-policy.js";

type Flags = Pick<ClassifiedError, "retryable" | "rotate_credential" | "fallback" | "compress">;

// Written out by hand, apart from REASON_FLAGS, so a change to the policy table fails here on purpose.
const F = (retryable: boolean, rotate_credential: boolean, fallback: boolean, compress: boolean): Flags => ({
  retryable,
  rotate_credential,
  fallback,
  compress,
});
const EXPECTED_FLAGS: Record<ErrorReason, Flags> = {
  rate_limit: F(true, true, true, false),
  overloaded: F(true, false, true, false),
  server_error: F(true, false, true, false),
  timeout: F(true, false, true, false),
  stream_drop: F(true, false, true, false),
  unreachable: F(true, false, true, false),
  ssl_cert_verification: F(false, false, true, false),
  local_resources: F(true, false, false, false),
  context_overflow: F(false, false, false, true),
  payload_too_large: F(false, false, false, true),
  long_context_tier: F(false, false, true, false),
  auth: F(false, true, true, false),
  auth_permanent: F(false, true, true, false),
  key_required: F(false, false, true, false),
  billing: F(false, true, true, false),
  model_not_found: F(false, false, true, false),
  model_incompatible: F(false, false, true, false),
  reasoning_mandatory: F(false, false, true, false),
  content_policy_blocked: F(false, false, true, false),
  invalid_request: F(false, false, false, false),
  format_error: F(true, false, true, false),
  thinking_signature: F(false, false, false, false),
  aborted: F(false, false, false, false),
  reply_diverged: F(false, false, false, false),
  circuit_open: F(false, false, true, false),
  unknown: F(true, false, true, false),
};

const failure = (partial: Partial<ProviderFailure>): ProviderFailure => ({
  status: null,
  headers: {},
  body: null,
  ...partial,
});

describe("classify: provider fixtures", () => {
  it("covers every provider with enough rows", () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(60);
    const names = ROWS.map((r) => `${r.provider}: ${r.name}`);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(ROWS.map((row) => [`${row.provider}: ${row.name}`, row] as const))("%s", (_label, row) => {
    const input = failure(row.failure);
    const result = row.no_clock ? classify(input) : classify(input, NOW);
    const { message, ...rest } = result;
    expect(rest).toEqual({
      reason: row.reason,
      ...EXPECTED_FLAGS[row.reason],
      retry_after_ms: row.retry_after_ms ?? null,
      status: input.status,
    });
    expect(message.length).toBeGreaterThan(0);
    expect(message.length).toBeLessThanOrEqual(MESSAGE_MAX_CHARS);
    if (row.message !== undefined) expect(message).toContain(row.message);
    if (row.not_in_message !== undefined) expect(message).not.toContain(row.not_in_message);
  });
});

describe("classify: the rule table", () => {
  it("gives every rule a one-line reason and every reason its flags", () => {
    for (const rule of RULES) {
      expect(rule.why.length).toBeGreaterThan(20);
      expect(rule.why).not.toContain("\n");
    }
    expect(Object.keys(REASON_FLAGS).sort()).toEqual([...ERROR_REASONS].sort());
    expect(REASON_FLAGS).toEqual(EXPECTED_FLAGS);
  });

  it("calls a failure with nothing to go on unknown", () => {
    expect(classify(failure({}), NOW)).toEqual({
      reason: "unknown",
      ...EXPECTED_FLAGS.unknown,
      retry_after_ms: null,
      status: null,
      message: "unknown",
    });
  });

  it("calls a redirect unknown", () => {
    expect(classify(failure({ status: 302, body: "" }), NOW).reason).toBe("unknown");
  });

  it("is pure: the same input gives the same output", () => {
    for (const row of ROWS)
      expect(classify(failure(row.failure), NOW)).toEqual(classify(failure(row.failure), NOW));
  });
});

describe("classify: messages", () => {
  it("redacts keys and bearer tokens wherever they appear", () => {
    const text = redact(
      "key sk-ant-api03-AAAABBBBCCCC and Authorization: Bearer eyJhbGciOi.abc.def and api_key=hunter2secret",
    );
    expect(text).not.toMatch(/AAAABBBB|eyJhbGciOi|hunter2secret/);
    expect(text).toContain("Bearer [redacted]");
  });

  it("redacts a key hidden in an upstream raw error", () => {
    const result = classify(
      failure({
        status: 401,
        body: {
          error: {
            code: 401,
            message: "Provider returned error",
            metadata: { raw: "bad key sk-or-v1-0123456789abcdef" },
          },
        },
      }),
      NOW,
    );
    expect(result.reason).toBe("auth");
    expect(result.message).not.toContain("0123456789abcdef");
  });

  it("shortens long messages to one line", () => {
    const result = classify(
      failure({ status: 400, body: { error: { message: `line\n${"x".repeat(5000)}` } } }),
      NOW,
    );
    expect(result.message.length).toBe(MESSAGE_MAX_CHARS);
    expect(result.message.startsWith("line x")).toBe(true);
    expect(result.message.endsWith("…")).toBe(true);
  });

  it("falls back to the status, then the transport", () => {
    expect(classify(failure({ status: 500 }), NOW).message).toBe("HTTP 500");
    expect(
      classify(
        failure({
          status: 200,
          phase: "stream",
          transport: { code: "ECONNRESET", message: "socket hang up" },
        }),
        NOW,
      ).message,
    ).toBe("ECONNRESET: socket hang up");
  });

  it("words an endpoint that never answered: where, what happened, what to check", () => {
    const refused = (code: string, message: string, endpoint?: string) =>
      classify(failure({ phase: "connect", transport: { code, message }, endpoint: endpoint ?? null }), NOW);
    expect(refused("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:4", "http://127.0.0.1:4/v1").message).toBe(
      "could not connect to http://127.0.0.1:4/v1 (connection refused): is the provider running?",
    );
    expect(refused("EAI_AGAIN", "getaddrinfo EAI_AGAIN llm.invalid").message).toBe(
      "could not connect to the provider (host name not found): is the host name in base_url right, and does DNS answer?",
    );
    expect(refused("EWHATEVER", "something odd", "http://h/v1").message).toBe(
      "could not connect to http://h/v1 (EWHATEVER: something odd): is the provider running, and is base_url right?",
    );
  });
});

describe("classify: our own process out of file descriptors", () => {
  // The shape the openai and Anthropic clients give: a connection error whose cause chain ends in
  // Node's socket error (as describeTransport reads it), before any byte left this machine.
  const local = (code: string) =>
    classify(
      failure({
        phase: "connect",
        transport: {
          name: "Error",
          code,
          message: `connect ${code} 127.0.0.1:4000 - Local (undefined:undefined)`,
        },
        endpoint: "http://127.0.0.1:4000/v1",
      }),
      NOW,
    );

  it("is local_resources, not unreachable: retried later, never a reason to blame or leave the provider", () => {
    for (const code of ["EMFILE", "ENFILE", "ENOBUFS", "ENOMEM"]) {
      const result = local(code);
      expect(result).toMatchObject({
        reason: "local_resources",
        retryable: true,
        rotate_credential: false,
        fallback: false,
        compress: false,
      });
    }
  });

  it("says whose resource ran out and what to do, and that the provider is not at fault", () => {
    expect(local("EMFILE").message).toBe(
      "Tenax's own process is out of file descriptors (EMFILE) while connecting to http://127.0.0.1:4000/v1: the provider was not reached and is not at fault; raise its open-file limit (ulimit -n, LimitNOFILE=) and see what holds connections open (ls /proc/PID/fd)",
    );
    expect(local("ENFILE").message).toMatch(/^this machine is out of file descriptors \(ENFILE\)/);
    expect(local("EMFILE").message.length).toBeLessThanOrEqual(MESSAGE_MAX_CHARS);
  });
});

describe("parseDuration", () => {
  it.each([
    ["6m0s", 360_000],
    ["1s", 1000],
    ["20ms", 20],
    ["1.5s", 1500],
    ["2h", 7_200_000],
    ["3", 3000],
    ["", null],
    ["abc", null],
    ["5s trailing", null],
  ] as const)("%s", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

describe("classify: never throws on odd input", () => {
  let deep: unknown = { error: { message: "bottom" } };
  for (let i = 0; i < 10_000; i++) deep = { error: deep };
  const deepText = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error("boom");
      },
      ownKeys() {
        throw new Error("boom");
      },
    },
  );

  const cases: [string, Partial<ProviderFailure>, ErrorReason][] = [
    ["null body on a 500", { status: 500, body: null }, "server_error"],
    ["a number body on a 400", { status: 400, body: 42 }, "invalid_request"],
    ["an array body on a 429", { status: 429, body: [1, "two", { three: 3 }] }, "rate_limit"],
    ["a huge string body on a 400", { status: 400, body: "overflow? ".repeat(200_000) }, "invalid_request"],
    ["a deeply nested object on a 502", { status: 502, body: deep }, "server_error"],
    ["deeply nested JSON text on a 400", { status: 400, body: deepText }, "invalid_request"],
    [
      "invalid JSON text without a status",
      { status: null, body: '{"error": {"message": "cut' },
      "format_error",
    ],
    ["invalid JSON text on a 400", { status: 400, body: '{"error": ' }, "invalid_request"],
    ["a hostile object body on a 503", { status: 503, body: hostile }, "server_error"],
    ["a boolean body and NaN status", { status: Number.NaN, body: true }, "unknown"],
    ["error as a number", { status: 400, body: { error: 7 } }, "invalid_request"],
    [
      "metadata.raw as an object",
      { status: 400, body: { error: { message: "x", metadata: { raw: { a: [1] } } } } },
      "invalid_request",
    ],
    [
      "metadata.raw as invalid JSON",
      { status: 429, body: { error: { message: "x", metadata: { raw: "{oops" } } } },
      "rate_limit",
    ],
    [
      "non-string header values",
      { status: 429, headers: { "retry-after": 7 as unknown as string }, body: null },
      "rate_limit",
    ],
    [
      "headers that are not an object",
      { status: 503, headers: null as unknown as Record<string, string> },
      "server_error",
    ],
    ["a transport without fields", { transport: {} as { message: string } }, "unreachable"],
  ];

  it.each(cases)("%s", (_label, partial, reason) => {
    const result = classify(failure(partial), NOW);
    expect(ERROR_REASONS).toContain(result.reason);
    expect(result.reason).toBe(reason);
    expect(typeof result.message).toBe("string");
    expect(result.message.length).toBeLessThanOrEqual(MESSAGE_MAX_CHARS);
  });

  it("reads header values given as numbers", () => {
    const result = classify(
      failure({ status: 429, headers: { "retry-after": 7 as unknown as string } }),
      NOW,
    );
    expect(result.retry_after_ms).toBe(7000);
  });
});

describe("classify: the reason table of docs/RELIABILITY.md", () => {
  it("says for every reason what its flags and the retry policy do", () => {
    const doc = readFileSync(new URL("../../docs/RELIABILITY.md", import.meta.url), "utf8");
    const start = doc.indexOf("| Reason ");
    expect(start).toBeGreaterThan(0);
    const rows = doc
      .slice(start)
      .split("\n\n")[0]
      ?.split("\n")
      .slice(2)
      .map((line) => line.split("|").map((cell) => cell.trim()));
    const seen: string[] = [];
    const yes = (flag: boolean) => (flag ? "yes" : "no");
    for (const [, reasons = "", retried, rotated, fallback] of rows ?? []) {
      for (const reason of reasons.match(/`[a-z_]+`/g) ?? []) {
        const name = reason.slice(1, -1) as ErrorReason;
        const flags = REASON_FLAGS[name];
        seen.push(name);
        expect([retried, rotated, fallback], name).toEqual([
          yes(flags.retryable && RETRY_POLICY[name].retry),
          yes(flags.rotate_credential),
          yes(flags.fallback),
        ]);
      }
    }
    expect(seen.sort()).toEqual([...ERROR_REASONS].sort());
  });
});
