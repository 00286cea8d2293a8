import { describe, expect, it } from "vitest";
import { allowedKeysAt, configSchema, defaultConfig, usesBuiltInSimulator } from "./schema.js";

function issues(input: unknown): Array<{ path: string; message: string }> {
  const result = configSchema.safeParse(input);
  if (result.success) return [];
  return result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
}

describe("configSchema", () => {
  it("fills every default", () => {
    const config = defaultConfig();
    expect(config).toEqual({
      providers: {},
      fallback: [],
      auxiliary: {},
      compression: {
        enabled: true,
        threshold: 0.5,
        keep_recent: 0.2,
        summary_max_tokens: 2000,
        max_attempts_per_turn: 2,
        cooldown_seconds: [60, 300, 900],
        min_saving: 0.1,
        low_saving_pause_seconds: 1800,
      },
      agent: {
        max_iterations: 50,
        max_continuations: 2,
        identical_call_limit: 3,
        failing_call_limit: 2,
        lease_seconds: 60,
        max_subagents: 3,
        stall_after: 120,
        turn_deadline: 1800,
      },
      retry: { max_attempts: 4 },
      breaker: { enabled: true, failures: 5, window: 60, cooldown: 30, max_cooldown: 600 },
      gateway: {
        host: "127.0.0.1",
        port: 8642,
        drain_timeout: 30,
        max_turns: 16,
        session_queue: 8,
        session_wait: 60,
        auto_resume: true,
        client_system: "append",
        run_retention_hours: 24,
        stream_buffer_kb: 1024,
        auth: "key",
        cors_origins: [],
        allowed_hosts: [],
        connections: {
          headers_timeout: 10,
          request_timeout: 60,
          keep_alive_timeout: 5,
          max_connections: 1000,
        },
      },
      dashboard: {
        host: "127.0.0.1",
        port: 8080,
        connections: {
          headers_timeout: 10,
          request_timeout: 60,
          keep_alive_timeout: 5,
          max_connections: 1000,
        },
        auth: { mode: "token", access_ttl: 900, refresh_ttl: 2_592_000, grace: 5 },
      },
      logs: { max_mb: 10, keep: 3 },
      health: {
        probe_interval: 5,
        probe_timeout: 10,
        integrity_interval: 120,
        integrity_cpu_percent: 1,
        provider_probe: "connect",
        provider_probe_interval: 60,
        provider_probe_timeout: 5,
      },
      instances: { clock_skew_max: 2 },
      checkpoints: { enabled: false, max_snapshots: 50 },
      store: {
        engine: "sqlite",
        pool_size: 10,
        synchronous: "full",
        busy_timeout_ms: 100,
        write_retry_budget_ms: 30000,
        integrity_check_timeout_ms: 2000,
      },
      tools: {
        exec: { mode: "ask", allow: [], approval_timeout: 300, env: [], sandbox: "auto" },
        files: { mode: "roots", roots: [] },
      },
      cron: { enabled: true, max_concurrent: 4, default_timeout: 600, run_retention_days: 30 },
      platforms: {},
      mcp: { servers: {} },
    });
    expect(usesBuiltInSimulator(config)).toBe(true);
  });

  it("takes the connection limits of the gateway and the dashboard, and names a bad one", () => {
    const config = configSchema.parse({
      dashboard: { connections: { headers_timeout: 0.5, max_connections: 50 } },
    });
    expect(config.dashboard.connections).toEqual({
      headers_timeout: 0.5,
      request_timeout: 60,
      keep_alive_timeout: 5,
      max_connections: 50,
    });
    expect(
      issues({ gateway: { connections: { headers_timeout: 0, max_connections: 2.5, idle: 3 } } }),
    ).toEqual([
      {
        path: "gateway.connections.headers_timeout",
        message: "expected a number of seconds (more than 0, at most 600)",
      },
      {
        path: "gateway.connections.max_connections",
        message: "expected a whole number of connections (10 or more)",
      },
      { path: "gateway.connections", message: 'Unrecognized key: "idle"' },
    ]);
    expect(issues({ dashboard: { connections: { headers_timeout: 90, request_timeout: 30 } } })).toEqual([
      {
        path: "dashboard.connections.headers_timeout",
        message: "headers_timeout must not be longer than request_timeout (the head is part of the request)",
      },
    ]);
  });

  it("takes dashboard.auth (token by default, oidc only with its provider) and dashboard.public_url", () => {
    expect(issues({ dashboard: { auth: { mode: "oidc" } } })).toEqual([
      {
        path: "dashboard.auth.oidc",
        message: expect.stringContaining("mode oidc needs dashboard.auth.oidc"),
      },
    ]);
    expect(issues({ dashboard: { auth: { mode: "open" } } })).toEqual([
      { path: "dashboard.auth.mode", message: 'expected "token", "oidc" or "none"' },
    ]);
    expect(issues({ dashboard: { public_url: "ftp://agent.example.com", auth: { access_ttl: 0 } } })).toEqual(
      [
        { path: "dashboard.public_url", message: "expected an http:// or https:// URL" },
        {
          path: "dashboard.auth.access_ttl",
          message: "expected a number of seconds (more than 0, at most 86400)",
        },
      ],
    );
    const oidc = { issuer: "https://id.example", client_id: "tenax", allowed: ["me@example.com"] };
    const config = configSchema.parse({
      dashboard: { public_url: "https://agent.example.com", auth: { mode: "oidc", oidc } },
    });
    expect(config.dashboard.public_url).toBe("https://agent.example.com");
    expect(config.dashboard.auth).toEqual({
      mode: "oidc",
      access_ttl: 900,
      refresh_ttl: 2_592_000,
      grace: 5,
      oidc: { ...oidc, timeout: 10 },
    });
  });

  it("takes agent.stall_after and agent.turn_deadline in seconds, the stall shorter than the deadline", () => {
    expect(configSchema.parse({ agent: { stall_after: 2, turn_deadline: 6 } }).agent).toMatchObject({
      stall_after: 2,
      turn_deadline: 6,
    });
    expect(issues({ agent: { stall_after: 0 } })).toEqual([
      { path: "agent.stall_after", message: "expected an integer from 1 to 86400" },
    ]);
    expect(issues({ agent: { turn_deadline: "soon" } })).toEqual([
      { path: "agent.turn_deadline", message: "expected an integer from 1 to 604800" },
    ]);
    const [inverted] = issues({ agent: { stall_after: 600, turn_deadline: 300 } });
    expect(inverted?.path).toBe("agent.stall_after");
    expect(inverted?.message).toContain("stall_after must be less than turn_deadline");
  });

  it("fills provider and auxiliary defaults", () => {
    const config = configSchema.parse({
      model: { provider: "p", name: "m" },
      providers: { p: { type: "openai" } },
      auxiliary: { title: { provider: "p", name: "small" } },
    });
    expect(config.providers.p).toEqual({
      type: "openai",
      max_concurrency: 8,
      models: {},
      timeouts: { connect: 10, first_byte: 60, idle: 60, total: 600 },
    });
    expect(config.auxiliary.title).toEqual({ provider: "p", name: "small", timeout: 120, fallback: [] });
    expect(usesBuiltInSimulator(config)).toBe(false);
  });

  it("lets a model name the built-in simulator when no providers are configured", () => {
    const config = configSchema.parse({ model: { provider: "simulator", name: "echo" } });
    expect(usesBuiltInSimulator(config)).toBe(true);
    expect(issues({ model: { provider: "main", name: "x" } })).toEqual([
      { path: "model.provider", message: expect.stringContaining("no providers are configured") },
    ]);
  });

  it("requires a model once providers are configured", () => {
    expect(issues({ providers: { p: { type: "anthropic" } } })).toEqual([
      { path: "model", message: expect.stringContaining("name the primary model") },
    ]);
  });

  it("checks every provider reference, even when other keys are wrong", () => {
    const found = issues({
      model: { provider: "p", name: "m" },
      providers: { p: { type: "openai", max_concurrency: 0 } },
      fallback: [{ provider: "q", name: "x" }],
      auxiliary: { vision: { provider: "r", name: "v", fallback: [{ provider: "s", name: "w" }] } },
    });
    expect(found.map((i) => i.path)).toEqual([
      "providers.p.max_concurrency",
      "fallback.0.provider",
      "auxiliary.vision.provider",
      "auxiliary.vision.fallback.0.provider",
    ]);
  });

  it("refuses an empty key list but lets a keyless server leave api_keys out", () => {
    const model = { provider: "p", name: "m" };
    expect(issues({ model, providers: { p: { type: "openai", api_keys: [] } } })).toEqual([
      { path: "providers.p.api_keys", message: expect.stringContaining("leave api_keys out") },
    ]);
    expect(issues({ model, providers: { p: { type: "openai" } } })).toEqual([]);
  });

  it("takes tools.files roots as absolute or ~ paths only, and mode as roots or full", () => {
    const files = (value: unknown) => issues({ tools: { files: value } });
    expect(files({ mode: "full", roots: ["/srv/data", "~", "~/notes/todo.md"] })).toEqual([]);
    expect(files({ mode: "open" })).toEqual([
      { path: "tools.files.mode", message: "expected roots or full" },
    ]);
    expect(files({ roots: ["data", ""] })).toEqual([
      {
        path: "tools.files.roots.0",
        message: "expected an absolute path or one starting with ~/ (a folder or a file)",
      },
      {
        path: "tools.files.roots.1",
        message: "expected an absolute path or one starting with ~/ (a folder or a file)",
      },
    ]);
    expect(files({ roots: "/srv" })).toEqual([
      { path: "tools.files.roots", message: "expected a list of absolute paths (folders or files)" },
    ]);
    expect(files({ root: ["/srv"] })[0]?.path).toBe("tools.files");
  });

  it("knows which models a simulator serves, built in or configured", () => {
    expect(issues({ model: { provider: "simulator", name: "gpt-5" } })).toEqual([
      {
        path: "model.name",
        message: expect.stringContaining("the built-in simulator serves (it serves: echo)"),
      },
    ]);
    const providers = {
      sim: { type: "simulator", models: { big: { context_window: 1000, max_output_tokens: 100 } } },
    };
    expect(
      issues({
        model: { provider: "sim", name: "big" },
        providers,
        auxiliary: { title: { provider: "sim", name: "echo" } },
      }),
    ).toEqual([
      {
        path: "auxiliary.title.name",
        message: expect.stringContaining("list it under providers.sim.models"),
      },
    ]);
  });

  it("checks a simulator script at load time, and only a simulator takes one", () => {
    const found = issues({
      model: { provider: "sim", name: "echo" },
      providers: {
        sim: {
          type: "simulator",
          script: [
            { type: "reply", text: "hi" },
            { type: "error", status: 42 },
          ],
        },
        real: { type: "openai", script: [] },
      },
    });
    expect(found.map((i) => i.path)).toEqual(["providers.sim.script.1.status", "providers.real.script"]);
  });

  it.each([
    [
      { providers: { p: { type: "openai", timeouts: { idle: 0 } } }, model: { provider: "p", name: "m" } },
      "providers.p.timeouts.idle",
    ],
    [
      { providers: { p: { type: "openai", base_url: "ftp://x" } }, model: { provider: "p", name: "m" } },
      "providers.p.base_url",
    ],
    [{ providers: { p: { type: "azure" } }, model: { provider: "p", name: "m" } }, "providers.p.type"],
    [{ compression: { threshold: 0 } }, "compression.threshold"],
    [{ compression: { keep_recent: 0.5 } }, "compression.keep_recent"],
    [{ compression: { threshold: 0.3, keep_recent: 0.3 } }, "compression.keep_recent"],
    [{ compression: { cooldown_seconds: [] } }, "compression.cooldown_seconds"],
    [{ compression: { cooldown_seconds: [60, 0] } }, "compression.cooldown_seconds.1"],
    [{ compression: { min_saving: 1 } }, "compression.min_saving"],
    [{ compression: { max_attempts_per_turn: 0 } }, "compression.max_attempts_per_turn"],
    [{ compression: { window: 1000 } }, "compression"],
    [{ retry: { max_attempts: 21 } }, "retry.max_attempts"],
    [{ gateway: { drain_timeout: -1 } }, "gateway.drain_timeout"],
    [{ gateway: { max_turns: 0 } }, "gateway.max_turns"],
    [{ gateway: { max_turns: 1.5 } }, "gateway.max_turns"],
    [{ store: { synchronous: "off" } }, "store.synchronous"],
    [{ checkpoints: { max_snapshots: 2.5 } }, "checkpoints.max_snapshots"],
    [{ auxiliary: { summary: {} } }, "auxiliary"],
  ])("rejects %j at %s", (input, path) => {
    expect(issues(input).map((i) => i.path)).toEqual([path]);
  });
});

describe("allowedKeysAt", () => {
  it("knows the keys of nested objects, through records and lists", () => {
    expect(allowedKeysAt(["retry"])).toEqual(["max_attempts"]);
    expect(allowedKeysAt(["compression"])).toContain("keep_recent");
    expect(allowedKeysAt(["providers", "any"])).toContain("max_concurrency");
    expect(allowedKeysAt(["fallback", 0])).toEqual(["provider", "name"]);
    expect(allowedKeysAt(["providers"])).toBeUndefined();
  });
});
