// A profile whose store holds what a dashboard shows after a few days of use: sessions with and
// without titles, one whose turn called tools (a long command, a failing one, a hostile argument),
// one whose last turn failed and one interrupted; and the dashboard serving it in-process, as
// `tenax dashboard` does (its gateway probe finds nothing on port 1, unless a test stands a gateway's
// answers in for it).

import { afterEach } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { buildDashboardApp } from "../../src/dashboard/app.js";
import { Dashboard, type DashboardOptions } from "../../src/dashboard/server.js";
import { closeApp, listen } from "../../src/http/listen.js";
import type { ProfilePaths } from "../../src/profile/paths.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import { type DashboardLogin, inProcessLogin } from "./dashboard-login.js";
import { profileWith } from "./temp-home.js";

/** The hostile argument and output: they must be shown as text, never run. */
export const HOSTILE_ARG = `<img src=x onerror="window.__xss = 1">`;
export const HOSTILE_OUTPUT = `<img src=x onerror="window.__xss = 2">`;
/** A path with no place to break a line. */
export const LONG_PATH = `/srv/${"deeply-nested-folder-".repeat(12)}report.csv`;
export const FIRST_QUESTION = "List the files here, read the notes, and save a summary to out.txt";

export interface Seeded {
  paths: ProfilePaths;
  tools: string;
  failed: string;
  interrupted: string;
  empty: string;
}

const json = (value: unknown) => JSON.stringify(value);
const ran = (stdout: string, over: Record<string, unknown> = {}) =>
  json({ exit_code: 0, signal: null, timed_out: false, stdout, stderr: "", ...over });

async function toolTurn(store: Store, session: string): Promise<void> {
  const turn = await store.startTurn(session, 60_000);
  await store.appendMessage({ session_id: session, role: "user", content: FIRST_QUESTION, turn_id: turn });
  const calls: Array<[string, string, Record<string, unknown>, string]> = [
    ["c1", "terminal", { command: "ls -la" }, ran("a.txt\nnotes.md\nout.txt\n")],
    [
      "c2",
      "read_file",
      { path: "notes.md" },
      json({ content: "...", total_lines: 12, start_line: 1, end_line: 12 }),
    ],
    ["c3", "write_file", { path: "out.txt", content: "hello" }, json({ bytes_written: 5, created: true })],
    [
      "c4",
      "terminal",
      { command: "cat missing.txt" },
      ran("", { exit_code: 1, stderr: "cat: missing.txt: No such file or directory\n" }),
    ],
    ["c5", "read_file", { path: "gone.txt" }, json({ error: "read_file: no such file: gone.txt" })],
    ["c6", "terminal", { command: `echo '${HOSTILE_ARG}'` }, ran(`${HOSTILE_OUTPUT}\n`)],
    [
      "c7",
      "read_file",
      { path: LONG_PATH },
      json({ content: "x", total_lines: 1, start_line: 1, end_line: 1 }),
    ],
  ];
  await store.appendMessage({
    session_id: session,
    role: "assistant",
    content: null,
    turn_id: turn,
    // As the agent stores its calls.
    tool_calls: calls.map(([id, name, args]) => ({ id, name, arguments: json(args) })),
  });
  for (const [id, name, , result] of calls)
    await store.appendMessage({
      session_id: session,
      role: "tool",
      content: result,
      tool_call_id: id,
      name,
      turn_id: turn,
    });
  await store.appendMessage({
    session_id: session,
    role: "assistant",
    content: "Three files; the summary is in out.txt.",
    turn_id: turn,
  });
  await store.updateTurn({ id: turn, status: "completed", ended_at: Date.now() });
}

export async function seedSessions(): Promise<Seeded> {
  const paths = profileWith("gateway: { port: 1 }\n");
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  for (let i = 0; i < 6; i++) {
    const id = await store.createSession({
      title: `Weekly planning notes, part ${i + 1}`,
      source: "gateway",
    });
    await store.appendMessage({ session_id: id, role: "user", content: `plan week ${i + 1}` });
    await store.appendMessage({ session_id: id, role: "assistant", content: `echo: plan week ${i + 1}` });
  }
  const empty = await store.createSession({ source: "cli" });
  const failed = await store.createSession({ title: "cron: nightly-report", source: "cron" });
  const failedTurn = await store.startTurn(failed, 60_000);
  await store.appendMessage({ session_id: failed, role: "user", content: "write the nightly report" });
  await store.updateTurn({
    id: failedTurn,
    status: "failed",
    error: "rate_limit: the provider refused (429) after 4 attempts",
  });
  const interrupted = await store.createSession({ source: "gateway" });
  await store.appendMessage({ session_id: interrupted, role: "user", content: "rebuild the search index" });
  const stopped = await store.startTurn(interrupted, 60_000);
  await store.updateTurn({ id: stopped, status: "interrupted", error: "stopped by the user" });
  // Untitled, as a `tenax chat` session is: its first question is its title.
  const tools = await store.createSession({ source: "cli" });
  await toolTurn(store, tools);
  await releaseStore(store);
  return { paths, tools, failed, interrupted, empty };
}

const serving: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of serving.splice(0)) await close();
});

/**
 * Serve the profile's dashboard on 127.0.0.1 as `tenax dashboard` does, until the test ends;
 * `options.probe` may stand a fake gateway's answers in for its look at the gateway.
 */
export async function serveDashboard(
  paths: ProfilePaths,
  options: Pick<DashboardOptions, "probe"> = {},
): Promise<{ url: string; login: DashboardLogin }> {
  const { config } = loadConfig(paths);
  const dashboard = new Dashboard({ paths, config, version: "test", ...options });
  const app = buildDashboardApp(dashboard);
  const port = await listen(app, "127.0.0.1", 0, { name: "dashboard" });
  serving.push(async () => {
    await closeApp(app);
    await dashboard.auth.close();
  });
  return { url: `http://127.0.0.1:${port}`, login: await inProcessLogin(dashboard) };
}
