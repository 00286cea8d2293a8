// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the config reads its keys as literal ${VAR}s
// Secrets never leave: a real gateway child whose provider (a simulator over HTTP) quotes the key
// it was sent in an error, a model that runs `env` through the terminal tool, and a reply that
// spells the key over several deltas. The key is looked for in every answer, stream, event, log
// line, stored byte and CLI output.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { requireBuild, tenaxAsync, testGatewayKey } from "./helpers/cli.js";
import { startDashboard } from "./helpers/dashboard.js";
import { feedText } from "./helpers/event-feed-text.js";
import { type GatewayProcess, startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

/** Not shaped like `sk-...`: only redaction by value can catch it. Letters and digits only, so
 * search.db's tokenizer keeps it as one term. */
const alnum = (n: number) =>
  [...randomBytes(n)]
    .map((b) => "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"[b % 57])
    .join("");
const PROVIDER_KEY = `zq8Hk2${alnum(26)}`;
const GATEWAY_KEY = `gw${alnum(30)}`;
const MARKER = "[redacted:providers.main.api_keys[0]]";

const sims: Simulator[] = [];
const servers: ReturnType<typeof createServer>[] = [];
const saved = { ...process.env };
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  for (const name of ["TENAX_API_KEY", "COPY_OF_THE_KEY"]) delete process.env[name];
  Object.assign(process.env, saved);
});

/**
 * A profile whose provider key is `${MAIN_KEY}` from its .env, and whose gateway key is
 * TENAX_API_KEY in the gateway's environment; the environment also holds a copy of the provider
 * key under another name.
 */
async function secretProfile() {
  const sim = await startSimulator();
  sims.push(sim);
  const paths = profileWith(
    [
      "model: { provider: main, name: echo }",
      // The worst case: every command runs (the exec policy is not what keeps secrets here).
      "tools: { exec: { mode: full } }",
      "providers:",
      `  main: { type: simulator, base_url: "${sim.url}", api_keys: ["\${MAIN_KEY}"] }`,
      'gateway: { api_key: "${TENAX_API_KEY}" }',
      "",
    ].join("\n"),
    `MAIN_KEY=${PROVIDER_KEY}\n`,
  );
  const gw = await startGateway(paths.home, undefined, undefined, {
    TENAX_API_KEY: GATEWAY_KEY,
    COPY_OF_THE_KEY: PROVIDER_KEY,
  });
  return { sim, paths, gw };
}

const auth = { authorization: `Bearer ${GATEWAY_KEY}`, "content-type": "application/json" };

async function chat(gw: GatewayProcess, content: string, stream = false) {
  const response = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ model: "tenax", stream, messages: [{ role: "user", content }] }),
  });
  return {
    status: response.status,
    session: response.headers.get("x-session-id"),
    text: await response.text(),
  };
}

/** The text of a streamed answer's deltas, joined. */
function streamedText(sse: string): string {
  let text = "";
  for (const block of sse.split("\n\n")) {
    const at = block.indexOf("data: {");
    if (at < 0) continue;
    const data = JSON.parse(block.slice(at + 6)) as { choices?: { delta?: { content?: string } }[] };
    text += data.choices?.[0]?.delta?.content ?? "";
  }
  return text;
}

/** What /api/events holds now (the feed never ends by itself: read until it goes quiet). */
const feed = (gw: GatewayProcess) => feedText(gw, auth);

/** Every file of the profile but the two that hold the key on purpose, as bytes (latin1). */
function storedFiles(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const file = join(dir, name);
    if (name === ".env" || name === "config.yaml" || !statSync(file).isFile()) continue;
    out[name] = readFileSync(file).toString("latin1");
  }
  return out;
}

/** Where in `texts` a secret appears: the whole key anywhere, or (for the search index, which
 * lowercases terms and may share a prefix with the term before) its lowercased last 16 chars. */
function leaks(texts: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [where, text] of Object.entries(texts)) {
    for (const [what, key] of [
      ["provider key", PROVIDER_KEY],
      ["gateway key", GATEWAY_KEY],
    ] as const) {
      if (text.includes(key) || text.toLowerCase().includes(key.slice(-16).toLowerCase()))
        found.push(`${what} in ${where}`);
    }
  }
  return found;
}

describe("secrets never leave the gateway", () => {
  it("a provider error quoting the key: redacted in the answer, the stream, the feed, the log, the store and the CLI", async () => {
    const { sim, paths, gw } = await secretProfile();
    const error = {
      type: "error" as const,
      status: 400,
      body: {
        error: {
          message: `Invalid request: the key ${PROVIDER_KEY} may not set 'logit_bias' on this model.`,
          type: "invalid_request_error",
          code: "invalid_parameter",
        },
      },
    };
    sim.script([error, error]);
    const plain = await chat(gw, "first question");
    const streamed = await chat(gw, "second question", true);
    // The provider did get the key (this is the failure being redacted), and the answers name it.
    expect(sim.requests()[0]?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(plain.text).toContain(MARKER);
    expect(streamed.text).toContain(MARKER);

    const events = await feed(gw);
    expect(events).toContain("turn_finished");
    const sessions = [plain.session, streamed.session].filter((s): s is string => s !== null);
    expect(sessions).toHaveLength(2);
    const shown = await Promise.all(
      sessions.flatMap((id) => [
        tenaxAsync(paths.home, ["sessions", "show", id]),
        tenaxAsync(paths.home, ["sessions", "show", id, "--json"]),
      ]),
    );
    for (const run of shown) expect(run.status, run.stderr).toBe(0);
    expect(shown.map((r) => r.stdout).join("\n")).toContain(MARKER);
    const api = await (await fetch(`${gw.url}/api/sessions/${sessions[0]}`, { headers: auth })).text();

    expect(
      leaks({
        "the answer": plain.text,
        "the streamed answer": streamed.text,
        "/api/events": events,
        "/api/sessions/ID": api,
        "tenax sessions show": shown.map((r) => r.stdout + r.stderr).join("\n"),
        "the gateway's output": gw.stdout() + gw.stderr(),
        ...storedFiles(paths.dir),
      }),
    ).toEqual([]);
    expect(readFileSync(join(paths.dir, "logs", "gateway.log"), "utf8")).toContain("turn_finished");
  });

  it("a model that runs `env`: neither key is in the tool's output, the model's request or the transcript", async () => {
    const { sim, paths, gw } = await secretProfile();
    sim.script([
      { type: "tool_calls", calls: [{ id: "call_env", name: "terminal", arguments: { command: "env" } }] },
      { type: "reply", text: "done" },
    ]);
    const answer = await chat(gw, "what is in your environment?");
    expect(answer.status).toBe(200);
    const second = sim.requests()[1]?.body as { messages: { role: string; content: string }[] } | undefined;
    const sent = JSON.stringify(second);
    const toolOutput = second?.messages.find((m) => m.role === "tool")?.content;
    // The command ran and printed an environment...
    expect(toolOutput).toContain("PATH=");
    // ...without the secrets' variables at all (not even redacted: they were never there).
    expect(toolOutput).not.toMatch(/TENAX_API_KEY=|COPY_OF_THE_KEY=/);
    const shown = await tenaxAsync(paths.home, ["sessions", "show", answer.session ?? "", "--json"]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("PATH=");
    expect(
      leaks({
        "the model's request": sent,
        "the answer": answer.text,
        "tenax sessions show": shown.stdout,
        ...storedFiles(paths.dir),
      }),
    ).toEqual([]);
  });

  it("a reply that spells the key over several deltas is redacted in the stream and the stored reply", async () => {
    const { sim, paths, gw } = await secretProfile();
    const reply = { type: "reply" as const, text: `the key is ${PROVIDER_KEY}, keep it safe`, chunk_size: 5 };
    sim.script([reply, reply]);
    const streamed = await chat(gw, "tell me the key", true);
    const plain = await chat(gw, "again, please");
    expect(streamedText(streamed.text)).toBe(`the key is ${MARKER}, keep it safe`);
    expect(JSON.parse(plain.text).choices[0].message.content).toBe(`the key is ${MARKER}, keep it safe`);
    expect(
      leaks({
        "the streamed deltas": streamedText(streamed.text),
        "the answer": plain.text,
        ...storedFiles(paths.dir),
      }),
    ).toEqual([]);
  });

  it("a models probe whose 401 quotes the key: redacted in /health, tenax status --json, the dashboard and the store", async () => {
    // The simulator's GET /models cannot be told to fail: a stand-in provider over real HTTP
    // refuses every request and quotes the key it was sent, as some providers do.
    const seen: string[] = [];
    const provider = createServer((req, res) => {
      const sent = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      seen.push(`${req.method} ${req.url} ${sent}`);
      res.writeHead(401, { "content-type": "application/json" }).end(
        JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${sent}. Find your key in your account settings.`,
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        }),
      );
    });
    servers.push(provider);
    await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
    const port = (provider.address() as AddressInfo).port;
    const paths = profileWith(
      [
        "model: { provider: main, name: echo }",
        "providers:",
        `  main: { type: openai, base_url: "http://127.0.0.1:${port}/v1", api_keys: ["\${MAIN_KEY}"] }`,
        'gateway: { api_key: "${TENAX_API_KEY}" }',
        "health: { provider_probe: models }",
        "",
      ].join("\n"),
    );
    // The gateway key every tenax child of this home gets (so status and the dashboard agree).
    const gatewayKey = testGatewayKey(paths.home);
    writeFileSync(paths.env, `MAIN_KEY=${PROVIDER_KEY}\nTENAX_API_KEY=${gatewayKey}\n`, { mode: 0o600 });
    const gw = await startGateway(paths.home);
    const health = await (await gw.fetch("/health")).text();
    // The probe sent the key and the provider quoted it back: this is what must not be shown.
    expect(seen).toEqual([`GET /v1/models ${PROVIDER_KEY}`]);
    const main = (
      JSON.parse(health) as {
        components: { providers: { providers: { provider: string; status: string; last_error: unknown }[] } };
      }
    ).components.providers.providers[0];
    expect(main).toMatchObject({
      provider: "main",
      status: "down",
      last_error: {
        source: "probe",
        reason: "auth",
        message: expect.stringContaining(`Incorrect API key provided: ${MARKER}.`),
      },
    });
    const status = await tenaxAsync(paths.home, ["status", "--json"]);
    expect(JSON.parse(status.stdout).components.providers.providers[0].last_error.message).toContain(MARKER);
    const dashboard = await startDashboard(paths.home);
    let view = "";
    const deadline = Date.now() + 10_000;
    while (!view.includes(MARKER) && Date.now() < deadline) {
      view = await (await dashboard.fetch("/api/gateway")).text();
      if (!view.includes(MARKER)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(view).toContain(MARKER);
    gw.child.kill("SIGTERM");
    await gw.exited;
    expect(
      leaks({
        "/health": health,
        "tenax status --json": status.stdout + status.stderr,
        "the dashboard's /api/gateway": view,
        "the gateway's output": gw.stdout() + gw.stderr(),
        "the dashboard's output": dashboard.stdout() + dashboard.stderr(),
        ...storedFiles(paths.dir),
      }),
    ).toEqual([]);
  });
});
