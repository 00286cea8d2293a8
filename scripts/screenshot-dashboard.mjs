// docs/dashboard.png: a populated dashboard, made from the built CLI (run `npm run build` first)
// on a throwaway TENAX_HOME: a simulator with a two-key pool, a gateway, a few sessions (one whose
// turn ran tools, one key cooling after a scripted 429, one turn the provider refused, one from
// `tenax chat`), and `tenax dashboard`, photographed in Debian's headless Chromium at 1440 px.
// Usage: node scripts/screenshot-dashboard.mjs [OUT.png]
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";
import { startSimulator } from "../dist/llm/simulator/server.js";

const ROOT = resolve(import.meta.dirname, "..");
const OUT = resolve(process.argv[2] ?? join(ROOT, "docs", "dashboard.png"));
const home = mkdtempSync(join(tmpdir(), "tenax-shot-"));
// The project the agent works in: its tools see this folder, not the profile.
const project = join(home, "project");
// The gateway and the dashboard find this key as TENAX_API_KEY, as the chat below sends it.
const KEY = "tnx-screenshot-key";
const env = { ...process.env, TENAX_HOME: home, HOME: home, TENAX_API_KEY: KEY };
delete env.TENAX_PROFILE;
const children = [];

/** Start a `tenax` command and resolve with the URL of its "listening" line. */
function start(args, pattern) {
  const child = spawn(process.execPath, [join(ROOT, "bin", "tenax.js"), ...args], { cwd: project, env });
  children.push(child);
  let out = "";
  return new Promise((resolveUrl, reject) => {
    const onData = (chunk) => {
      out += chunk;
      const match = pattern.exec(out);
      if (match) resolveUrl(match[1]);
    };
    child.stdout.setEncoding("utf8").on("data", onData);
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      out += chunk;
    });
    child.once("exit", (code) => reject(new Error(`tenax ${args.join(" ")} exited (${code}):\n${out}`)));
  });
}

/** Run a `tenax` command to its end; rejects with its output unless it exits 0. */
function run(args) {
  const child = spawn(process.execPath, [join(ROOT, "bin", "tenax.js"), ...args], { cwd: project, env });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    out += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk) => {
    out += chunk;
  });
  return new Promise((resolveRun, reject) =>
    child.once("exit", (code) =>
      code === 0 ? resolveRun() : reject(new Error(`tenax ${args.join(" ")} exited (${code}):\n${out}`)),
    ),
  );
}

/** One turn through the gateway; `refused`: the turn is meant to fail. */
async function chat(gateway, content, refused = false) {
  const res = await fetch(`${gateway}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });
  if ((res.status === 200) === refused) throw new Error(`chat answered ${res.status}: ${await res.text()}`);
  return res.headers.get("x-session-id");
}

const sim = await startSimulator();
let context;
try {
  writeFileSync(
    join(home, "config.yaml"),
    `model: { provider: main, name: echo }
providers:
  main: { type: simulator, base_url: "${sim.url}", api_keys: ["sk-demo-first-key-0001", "sk-demo-second-key-0002"] }
`,
    { mode: 0o600 },
  );
  mkdirSync(project);
  writeFileSync(
    join(project, "deploy-notes.md"),
    "# Deploy 2026-11-28\n\n- api 4.2.1: rolled out 14:05, healthy\n- search: index rebuilt, 12 min\n- billing: held back (migration pending)\n",
  );
  // A session of `tenax chat`: untitled, so its first question is its title. (Not spawnSync: the
  // simulator answering it runs in this process.)
  await run(["chat", "-q", "What is on the on-call rota this week?"]);
  const gateway = await start(["gateway", "run", "--port", "0"], /gateway listening on (http:\/\/\S+)/);
  const dashboard = await start(["dashboard", "--port", "0"], /dashboard listening on (http:\/\/\S+)/);
  // Let the dashboard follow the gateway's events before the turns that make them.
  await new Promise((r) => setTimeout(r, 2500));
  sim.script([
    {
      type: "tool_calls",
      calls: [
        { name: "terminal", arguments: { command: "ls -la" } },
        { name: "read_file", arguments: { path: "deploy-notes.md" } },
      ],
    },
    {
      type: "reply",
      text: "On-call summary: api 4.2.1 is out and healthy; the search index was rebuilt (12 min); billing is held back until its migration lands.",
    },
  ]);
  const first = await chat(gateway, "Summarize yesterday's deploy notes for the on-call channel.");
  sim.script([
    {
      type: "error",
      status: 429,
      headers: { "retry-after": "600" },
      body: { error: { message: "rate limited" } },
    },
  ]);
  await chat(gateway, "Which services restarted after the kernel upgrade?");
  sim.script([
    {
      type: "error",
      status: 400,
      body: { error: { message: "prompt is too long for this model", type: "invalid_request_error" } },
    },
  ]);
  await chat(gateway, "Compare every incident report since January", true);
  await chat(gateway, "Draft a post-mortem outline for the search index rebuild.");

  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "tenax-chromium-")), {
    executablePath: process.env.TENAX_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1440, height: 860 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(dashboard);
  await page.locator(`#sessions li[data-session="${first}"]`).click();
  await page.locator("#transcript .message").first().waitFor();
  await page.locator("#events li").first().waitFor({ timeout: 10_000 });
  await page.waitForTimeout(1200);
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${OUT}`);
} finally {
  await context?.close();
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : null)),
  );
  await sim.close();
  rmSync(home, { recursive: true, force: true });
}
