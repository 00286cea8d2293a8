// The crash loop every store engine is tortured with. Concurrent clients talk to a real gateway
// (chat turns with X-Session-Id continuity, and runs with an Idempotency-Key) over slow streams and
// tool calls from the simulator, and the gateway is killed with SIGKILL at seeded random moments,
// then started again, cycle after cycle. After each restart, once the resumed turns are done, the
// store holds every acknowledged message and reply in order, once, and every session is
// consistent; at the end every acknowledged run answers its Idempotency-Key with the same run, and
// each turn's final answer was asked of the model at most once per resumption.
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { RESUME_NOTE } from "../../src/agent/turn-resume.js";
import { type Random, seededRandom } from "../../src/core/deps.js";
import type { Simulator } from "../../src/llm/simulator/server.js";
import type { SimStep } from "../../src/llm/simulator/steps.js";
import type { ProfilePaths } from "../../src/profile/paths.js";
import type { StoreReads } from "../../src/store/port.js";
import type { ProfileReader } from "../../src/store/registry.js";
import { type GatewayProcess, simProfile, startGateway } from "./gateway.js";
import { tempDir } from "./tmp.js";
import { chatTurn, expectConsistent, isFinalReply, tortureSeed } from "./torture.js";

/** Opens a read-only view of the profile's store, on whichever engine the test set up. */
export type OpenReader = () => Promise<ProfileReader>;

export interface CrashLoopOptions {
  /** Names the seed and the summary line. */
  name: string;
  chatClients: number;
  runClients: number;
  /** Cycles always run, then more until `budgetMs` has passed, at most `maxCycles`. */
  minCycles: number;
  maxCycles: number;
  budgetMs: number;
  /** Puts the profile on its engine (config, .env) before the first start. */
  prepare?(paths: ProfilePaths): void;
  /** The store's read-only view, opened after each restart. */
  openReader(paths: ProfilePaths): Promise<ProfileReader>;
}

export interface CrashLoopResult {
  paths: ProfilePaths;
  cycles: number;
  acked: number;
  runs: number;
  interrupted: number;
  summary: string;
}

const TOKEN = /^([cr]\d+ m\d+)(?:\n|$)/;

export interface AckedTurn {
  sessionId: string;
  text: string;
  reply: string;
  turn: { id: string; status: string };
}

export interface AckedRun {
  runId: string;
  key: string;
  sessionHeader: string | null;
  body: string;
  sessionId: string;
}

/** A client's own state across phases: its index, its session, its next message number. */
interface Client {
  c: number;
  session: string | null;
  n: number;
  /** Answers that were neither acknowledged nor a dead gateway. */
  odd: string[];
  /** Turns the guardrail halted because the script made the model repeat a call. */
  halted: string[];
}

interface Phase {
  gateway: GatewayProcess;
  live: boolean;
}

/** A random mix of slow replies and tool calls, for whichever requests come next. */
export function steps(random: Random, file: string, count: number): SimStep[] {
  return Array.from({ length: count }, (_, i): SimStep => {
    const pick = random();
    if (pick < 0.45)
      return {
        type: "reply",
        text: `a slow reply number ${i} that streams in small pieces`,
        chunk_size: 4,
        chunk_delay_ms: 10 + Math.floor(random() * 40),
      };
    if (pick < 0.65)
      return {
        type: "tool_calls",
        calls: [{ name: "terminal", arguments: { command: "sleep 0.3; echo slept" } }],
      };
    if (pick < 0.8) return { type: "tool_calls", calls: [{ name: "read_file", arguments: { path: file } }] };
    return { type: "reply", text: `a quick reply ${i}` };
  });
}

/** One chat client: turns in its session until the phase ends or the gateway dies under it. */
async function chatClient(phase: Phase, client: Client, acked: AckedTurn[]) {
  const { c, odd } = client;
  while (phase.live) {
    const text = `c${c} m${client.n++}`;
    let answer: Awaited<ReturnType<typeof chatTurn>>;
    try {
      answer = await chatTurn(phase.gateway, text, client.session);
    } catch {
      return; // the gateway died: this turn was not acknowledged
    }
    // The script can make the model read the same file three times in a row: the guardrail halts
    // that turn, rightly, and says so with a 422; the session goes on.
    if (answer.status === 422 && answer.code === "identical_call_limit" && answer.sessionId !== null) {
      client.session = answer.sessionId;
      client.halted.push(text);
      continue;
    }
    if (answer.status !== 200 || answer.sessionId === null || answer.turn === null) {
      odd.push(`${text}: ${answer.status} ${answer.reply}`);
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    client.session = answer.sessionId;
    acked.push({ sessionId: answer.sessionId, text, reply: answer.reply, turn: answer.turn });
  }
}

interface RunView {
  run_id: string;
  session_id: string;
  status: string;
}

/** POST /v1/runs with an Idempotency-Key, continuing a session when given one. */
function submitRun(
  gateway: GatewayProcess,
  run: Pick<AckedRun, "key" | "sessionHeader" | "body">,
): Promise<Response> {
  return gateway.fetch("/v1/runs", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "idempotency-key": run.key,
      ...(run.sessionHeader ? { "x-session-id": run.sessionHeader } : {}),
    },
    body: run.body,
  });
}

/** One runs client: submits a run (with a key), then follows its state until it ends. */
async function runClient(phase: Phase, client: Client, acked: AckedRun[]) {
  const { c, odd } = client;
  while (phase.live) {
    const text = `r${c} m${client.n++}`;
    const key = `key-${c}-${client.n}`;
    const body = JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] });
    const sessionHeader = client.session;
    let run: RunView;
    try {
      const response = await submitRun(phase.gateway, { key, sessionHeader, body });
      run = (await response.json()) as RunView;
      if (response.status !== 202) {
        odd.push(`${text}: run ${response.status} ${JSON.stringify(run)}`);
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
    } catch {
      return;
    }
    acked.push({ runId: run.run_id, key, sessionHeader, body, sessionId: run.session_id });
    client.session = run.session_id;
    // One turn at a time per session: wait for this run before the next.
    while (phase.live && run.status === "running") {
      await new Promise((r) => setTimeout(r, 100));
      try {
        run = (await (await phase.gateway.fetch(`/v1/runs/${run.run_id}`)).json()) as RunView;
      } catch {
        return;
      }
    }
  }
}

/** Resolves once no turn or run is running, as the store and the gateway both see it, twice in a row. */
async function settled(open: OpenReader, gateway: GatewayProcess, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  let quiet = 0;
  while (quiet < 2) {
    if (Date.now() > deadline) {
      const reader = await open();
      const stuck = (await reader.listRecords<{ status: string; turn_id: string | null }>("run")).filter(
        (r) => r.value.status === "running",
      );
      const detail = await Promise.all(
        stuck.map(
          async (r) =>
            `${JSON.stringify(r.value)} turns ${JSON.stringify(await reader.getTurns(r.session_id ?? ""))}`,
        ),
      );
      reader.close();
      throw new Error(`the gateway did not settle: turns still running ${detail.join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 200));
    const reader = await open();
    const running =
      (await reader.runningTurns()).length +
      (await reader.listRecords<{ status: string }>("run")).filter((r) => r.value.status === "running")
        .length;
    reader.close();
    const listed = (await (await gateway.fetch("/api/sessions?limit=1000")).json()) as {
      data: { running: boolean }[];
    };
    quiet = running === 0 && listed.data.every((s) => !s.running) ? quiet + 1 : 0;
  }
}

/** Every acknowledged chat turn: its question and its reply, in the order acknowledged. */
export async function expectAcknowledged(
  reader: StoreReads,
  acked: AckedTurn[],
  runs: AckedRun[],
): Promise<number> {
  const bySession = new Map<string, AckedTurn[]>();
  for (const a of acked) bySession.set(a.sessionId, [...(bySession.get(a.sessionId) ?? []), a]);
  let checked = 0;
  for (const [sessionId, turns] of bySession) {
    const messages = await reader.getMessages(sessionId);
    let lastSeq = -1;
    for (const turn of turns) {
      const question = messages.filter((m) => m.role === "user" && m.content === turn.text);
      expect(question, `${turn.text} is stored once`).toHaveLength(1);
      const q = question[0];
      expect(q?.seq ?? -1, `${turn.text} is in order`).toBeGreaterThan(lastSeq);
      lastSeq = q?.seq ?? -1;
      expect(q?.turn_id, `${turn.text} is in the turn that answered it`).toBe(turn.turn.id);
      const stored = (await reader.getTurns(sessionId)).find((t) => t.id === turn.turn.id);
      expect(stored?.status, `the turn of ${turn.text}`).toBe(turn.turn.status);
      // A turn halted by a guardrail answers with what it had; a completed one with its final reply.
      const reply = messages.filter((m) => m.turn_id === q?.turn_id && isFinalReply(m));
      if (turn.turn.status === "completed")
        expect(
          reply.map((m) => m.content),
          `the reply to ${turn.text}`,
        ).toEqual([turn.reply]);
      checked += 2;
    }
  }
  for (const run of runs) {
    const record = await reader.getRecord<{ status: string; turn_id: string | null; reply: string }>(
      "run",
      run.runId,
    );
    expect(record, `run ${run.runId} is stored`).not.toBeNull();
    expect(record?.status, `run ${run.runId} is settled`).not.toBe("running");
    if (record?.status === "completed" && record.turn_id !== null) {
      const replies = (await reader.getMessages(run.sessionId)).filter(
        (m) => m.turn_id === record.turn_id && isFinalReply(m),
      );
      expect(replies.map((m) => m.content)).toEqual([record.reply]);
    }
    checked++;
  }
  return checked;
}

/** The question's token at the start of a user message (the model sees a resume note merged into it). */
function tokenOf(m: { role: string; content: unknown }): string | null {
  if (m.role !== "user" || typeof m.content !== "string") return null;
  return TOKEN.exec(m.content)?.[1] ?? null;
}

/**
 * From the simulator's records: the final answer of each turn (by its question's token and how
 * many resume notes follow it) was completed at most once, and never for more resumptions than
 * the store counts interruptions.
 */
export async function expectAnsweredOnce(
  sim: Simulator,
  reader: StoreReads,
): Promise<{ answers: number; resumed: number }> {
  const finals = new Map<string, number>();
  const generations = new Map<string, number>();
  for (const r of sim.requests()) {
    if (r.path !== "/v1/chat/completions" || r.ended !== "completed") continue;
    if (r.step !== "reply" && r.step !== "default") continue;
    const messages = (r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
    const at = messages.findLastIndex((m) => tokenOf(m) !== null);
    const token = at < 0 ? null : tokenOf(messages[at] ?? { role: "", content: null });
    if (token === null) continue;
    const generation = messages
      .slice(at)
      .filter((m) => m.role === "user" && typeof m.content === "string")
      .reduce((n, m) => n + String(m.content).split(RESUME_NOTE).length - 1, 0);
    const id = `${token}#${generation}`;
    finals.set(id, (finals.get(id) ?? 0) + 1);
    generations.set(token, Math.max(generations.get(token) ?? 0, generation));
  }
  const twice = [...finals].filter(([, n]) => n > 1).map(([id]) => id);
  expect(twice, "final answers asked for twice in one resumption").toEqual([]);
  const interrupts = new Map<string, number>();
  for (const s of await reader.listSessions({ limit: 10_000 })) {
    const turns = new Map((await reader.getTurns(s.id)).map((t) => [t.id, t.interrupt_count]));
    for (const m of await reader.getMessages(s.id)) {
      const token = tokenOf(m);
      if (token !== null) interrupts.set(token, turns.get(m.turn_id ?? "") ?? 0);
    }
  }
  let resumed = 0;
  for (const [token, generation] of generations) {
    if (generation === 0) continue;
    resumed++;
    expect(generation, `${token}: resumptions`).toBeLessThanOrEqual(interrupts.get(token) ?? 0);
  }
  return { answers: finals.size, resumed };
}

/** Runs the loop; the caller adds what only its engine can check (SQLite's integrity check). */
export async function crashLoop(o: CrashLoopOptions): Promise<CrashLoopResult> {
  const seed = tortureSeed(o.name);
  const random = seededRandom(seed);
  const notes = tempDir();
  const file = join(notes, "notes.txt");
  writeFileSync(file, "something to read\n");
  // The file lies outside the gateway's working folder: a root lets read_file reach it. Its
  // commands run freely: this is a test of crashes, not of the exec policy.
  const { sim, paths, home } = await simProfile(
    "max_turns: 64",
    `tools: { exec: { mode: full }, files: { roots: [${JSON.stringify(notes)}] } }`,
  );
  appendFileSync(paths.config, "agent: { lease_seconds: 5 }\n");
  o.prepare?.(paths);
  const open: OpenReader = () => o.openReader(paths);

  const acked: AckedTurn[] = [];
  const runs: AckedRun[] = [];
  const odd: string[] = [];
  const halted: string[] = [];
  const client = (c: number): Client => ({ c, session: null, n: 0, odd, halted });
  const chatClients = Array.from({ length: o.chatClients }, (_, c) => client(c));
  const runClients = Array.from({ length: o.runClients }, (_, c) => client(c));
  const started = Date.now();
  let cycles = 0;
  let checked = 0;
  let gateway: GatewayProcess = await startGateway(home);
  while (cycles < o.maxCycles && (cycles < o.minCycles || Date.now() - started < o.budgetMs)) {
    cycles++;
    if (sim.queued() < 40) sim.script(steps(random, file, 60));
    const phase: Phase = { gateway, live: true };
    const clients = [
      ...chatClients.map((c) => chatClient(phase, c, acked)),
      ...runClients.map((c) => runClient(phase, c, runs)),
    ];
    // Kill somewhere between "turns just admitted" and "several turns in".
    await new Promise((r) => setTimeout(r, 50 + Math.floor(random() * 2500)));
    phase.live = false;
    gateway.child.kill("SIGKILL");
    await gateway.exited;
    await Promise.all(clients);

    gateway = await startGateway(home);
    await settled(open, gateway);
    const reader = await open();
    try {
      await expectConsistent(reader);
      checked = await expectAcknowledged(reader, acked, runs);
    } finally {
      reader.close();
    }
  }

  // A retried submission finds its run, across every restart since it was acknowledged.
  for (const run of runs) {
    const response = await submitRun(gateway, run);
    expect(response.status, `run ${run.runId} retried`).toBe(200);
    expect(((await response.json()) as { run_id: string }).run_id).toBe(run.runId);
  }
  gateway.child.kill("SIGKILL");
  await gateway.exited;

  const reader = await open();
  let figures: Awaited<ReturnType<typeof expectConsistent>>;
  let answered: Awaited<ReturnType<typeof expectAnsweredOnce>>;
  try {
    figures = await expectConsistent(reader);
    answered = await expectAnsweredOnce(sim, reader);
  } finally {
    reader.close();
  }
  const interrupted = figures.turns.filter((t) => t.interrupt_count > 0).length;
  const suspended = figures.turns.filter((t) => t.status === "suspended").length;
  const summary = `${o.name}: ${cycles} cycles, ${cycles + 1} kill -9; acknowledged ${acked.length} chat turns and ${runs.length} runs (${checked} checks after the last restart); store: ${figures.sessions} sessions, ${figures.messages} messages, ${figures.turns.length} turns (${interrupted} interrupted, ${answered.resumed} answered after a resume, ${suspended} suspended); ${answered.answers} final answers, none twice; halted by the guardrail: ${halted.length}; unexpected answers: ${odd.length}`;
  expect(odd).toEqual([]);
  expect(acked.length).toBeGreaterThan(cycles);
  return { paths, cycles, acked: acked.length, runs: runs.length, interrupted, summary };
}
