// The shared key ledger across processes: one Tenax process sees a key limited or refused, and
// another process of the same profile never sends that key; `tenax status` shows the pool from
// the store, by fingerprint only. Real child processes, a real simulator, a real state.db.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { keyFingerprint } from "../src/llm/key-fingerprint.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import type { SimStep } from "../src/llm/simulator/steps.js";
import { requireBuild, runAsync, tenax } from "./helpers/cli.js";
import { startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

const CALLER = new URL("./fixtures/model-caller.mjs", import.meta.url).pathname;

let sim: Simulator | undefined;

beforeAll(() => requireBuild());
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

interface CallerRun {
  code: number | null;
  replies: { reply: string; provider: string }[];
  events: { type: string; [key: string]: unknown }[];
  stderr: string;
}

async function caller(home: string, count: number): Promise<CallerRun> {
  const run = await runAsync(process.execPath, [CALLER, home, "default", String(count)]);
  const lines = run.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { event?: CallerRun["events"][number]; reply?: string; provider?: string });
  return {
    code: run.status,
    replies: lines.flatMap((l) =>
      l.reply === undefined ? [] : [{ reply: l.reply, provider: String(l.provider) }],
    ),
    events: lines.flatMap((l) => (l.event ? [l.event] : [])),
    stderr: run.stderr,
  };
}

async function profileAgainstSimulator(script: SimStep[]) {
  sim = await startSimulator();
  sim.script(script);
  const paths = profileWith(
    `model: { provider: main, name: echo }
providers:
  main:
    type: simulator
    base_url: ${sim.url}
    api_keys: ["\${KEY_ONE}", "\${KEY_TWO}"]
`,
    "KEY_ONE=sk-first-key-secret\nKEY_TWO=sk-second-key-secret\n",
  );
  return { paths, home: paths.home, sim };
}

const keysSeen = (s: Simulator) =>
  s.requests().map((r) => String(r.headers.authorization).replace(/^Bearer /, ""));

const limited: SimStep = {
  type: "error",
  status: 429,
  headers: { "retry-after": "120" },
  body: {
    error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" },
  },
};

const refused: SimStep = {
  type: "error",
  status: 401,
  body: {
    error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" },
  },
};

describe("the shared key ledger", () => {
  it("a second process never sends a key the first saw rate-limited, and status shows it cooling", async () => {
    const { home, sim: s } = await profileAgainstSimulator([limited]);
    const first = await caller(home, 1);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(keysSeen(s)).toEqual(["sk-first-key-secret", "sk-second-key-secret"]);
    expect(first.events.map((e) => e.type)).toEqual(["credential_rotated"]);

    const second = await caller(home, 3);
    expect(second.code).toBe(0);
    expect(second.replies).toHaveLength(3);
    // Three more requests, all on the second key: the first is cooling in the shared ledger.
    expect(keysSeen(s)).toEqual([
      "sk-first-key-secret",
      "sk-second-key-secret",
      "sk-second-key-secret",
      "sk-second-key-secret",
      "sk-second-key-secret",
    ]);
    expect(second.events).toEqual([]);

    // With the gateway up, the cooling key is the only thing wrong: degraded, exit 1.
    await startGateway(home);
    const status = tenax(home, ["status", "--json"]);
    expect(status.status).toBe(1);
    const report = JSON.parse(status.stdout) as {
      status: string;
      components: { credentials: { status: string; providers: { keys: Record<string, unknown>[] }[] } };
    };
    expect(report.status).toBe("degraded");
    const keys = report.components.credentials.providers[0]?.keys ?? [];
    expect(keys).toEqual([
      expect.objectContaining({
        fingerprint: keyFingerprint("sk-first-key-secret"),
        status: "cooling",
        reason: "rate_limit",
      }),
      expect.objectContaining({ fingerprint: keyFingerprint("sk-second-key-secret"), status: "ok" }),
    ]);
    const cooldown = Number(keys[0]?.cooldown_until) - Date.now();
    expect(cooldown).toBeGreaterThan(60_000);
    expect(cooldown).toBeLessThanOrEqual(120_000);
    expect(status.stdout).not.toContain("secret");

    const text = tenax(home, ["status"]);
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(
      /credentials\s+degraded\s+main key 1 \([0-9a-f]+\) cooling down after rate_limit for 1 min \d+ s more/,
    );
    expect(text.stdout).not.toContain("secret");
  });

  it("a key refused in one process stays out of every process until it changes; none left is down", async () => {
    const { home, paths, sim: s } = await profileAgainstSimulator([refused]);
    expect((await caller(home, 1)).code).toBe(0);
    const second = await caller(home, 2);
    expect(second.code).toBe(0);
    expect(keysSeen(s)).toEqual([
      "sk-first-key-secret",
      "sk-second-key-secret",
      "sk-second-key-secret",
      "sk-second-key-secret",
    ]);

    const gateway = await startGateway(home);
    const degraded = tenax(home, ["status"]);
    expect(degraded.status).toBe(1);
    expect(degraded.stdout).toContain("disabled after auth until the key changes");
    expect(degraded.stdout).toContain(`replace the disabled key in ${paths.config}`);

    // The second key is refused too: no model call can succeed, and status says the layer is down.
    s.script([refused]);
    const third = await caller(home, 1);
    expect(third.code).not.toBe(0);
    expect(third.stderr).toContain("every key of main is disabled");
    const down = tenax(home, ["status", "--json"]);
    expect(down.status).toBe(2);
    expect(JSON.parse(down.stdout).components.credentials.status).toBe("down");
    expect(JSON.parse(down.stdout).components.gateway.status).toBe("ok");
    gateway.child.kill("SIGTERM");
    // Stopped before the test's home is removed: a draining gateway still writes there.
    await gateway.exited;
    // Nothing was sent with a disabled key after it was refused.
    expect(keysSeen(s).filter((k) => k === "sk-first-key-secret")).toHaveLength(1);
  });
});
