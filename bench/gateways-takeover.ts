// The takeover time of a run whose gateway is killed (issue 27): two gateways of one profile on one
// PostgreSQL database; a run started on A (POST /v1/runs) with a slow simulated reply, followed on
// B (GET /v1/runs/ID/events); once its reply streams, A gets `kill -9`, and the clock runs until
// B has taken the turn over and until the run finished there. A is started again in its own home
// (its pid file left behind by the kill) before the next kill.
import { TENAX_HEADERS, type TenaxGateway } from "./tenax-gateway.js";

/** What one kill took, in ms from the SIGKILL. */
export interface KillFigures {
  run_id: string;
  turn_id: string;
  /** The turn's row back to running under B's owner, committed: B's `last_takeover.at` on /health. */
  takeover_ms: number;
  /** `run.resumed` read on B's event stream (which looks for a run another gateway ran every 250 ms). */
  resumed_seen_ms: number;
  /** `run.finished` read on B's event stream. */
  finished_seen_ms: number;
  status: string;
}

export interface TakeoverSettings {
  kills: number;
  /** The simulator's base URL (with /v1): the kill's slow reply is scripted there. */
  simUrl: string;
  /** The slow reply: this many chunks, one every `chunkDelayMs`, far longer than a takeover. */
  chunks: number;
  chunkDelayMs: number;
}

export interface TakeoverResult {
  settings: Omit<TakeoverSettings, "simUrl">;
  kills: KillFigures[];
  /** Kills whose run was not taken over or did not finish, with why. */
  failures: string[];
}

/** How long one kill may take, from the run's start to its end on B, before it counts as failed. */
const KILL_DEADLINE_MS = 60_000;

/** An SSE frame of a run's event stream, as it was read: its event type and data, and when. */
interface SeenEvent {
  event: string;
  data: Record<string, unknown>;
  at: number;
}

/**
 * A run's events on one gateway, read as they come: each frame's type and data with the moment the
 * bench read it (performance.now()); `next(type)` resolves with the first of that type.
 */
function follow(gateway: TenaxGateway, runId: string, signal: AbortSignal) {
  const seen: SeenEvent[] = [];
  let wake = () => {};
  let ended: Error | null = null;
  void (async () => {
    const res = await fetch(`${gateway.url}/v1/runs/${runId}/events`, { headers: TENAX_HEADERS, signal });
    if (res.status !== 200 || res.body === null) throw new Error(`events: HTTP ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (frame.startsWith(":")) continue;
        const field = (name: string) =>
          frame
            .split("\n")
            .find((l) => l.startsWith(`${name}: `))
            ?.slice(name.length + 2);
        seen.push({
          event: field("event") ?? "",
          data: JSON.parse(field("data") ?? "{}"),
          at: performance.now(),
        });
        wake();
      }
    }
    throw new Error("the event stream ended");
  })().catch((error: unknown) => {
    ended = error instanceof Error ? error : new Error(String(error));
    wake();
  });
  return {
    async next(type: string): Promise<SeenEvent> {
      for (;;) {
        const found = seen.find((e) => e.event === type);
        if (found) return found;
        if (ended) throw new Error(`no ${type} event on ${gateway.url}: ${ended.message}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
  };
}

/** The turn B last took over and when (B's clock), from its own row on /health; null while not shown. */
async function lastTakeover(b: TenaxGateway): Promise<{ turn_id: string; at: number } | null> {
  const res = await fetch(`${b.url}/health`, { headers: TENAX_HEADERS });
  const body = (await res.json()) as {
    components?: { instances?: { instances?: { self: boolean; last_takeover: unknown }[] } };
  };
  const self = body.components?.instances?.instances?.find((i) => i.self);
  const last = self?.last_takeover as { turn_id?: unknown; at?: unknown } | null | undefined;
  if (typeof last?.turn_id !== "string" || typeof last.at !== "number") return null;
  return { turn_id: last.turn_id, at: last.at };
}

/** B's record of taking over `turnId`: written into its instance's row with its next heartbeat. */
async function takeoverAt(b: TenaxGateway, turnId: string, signal: AbortSignal): Promise<number> {
  for (;;) {
    const last = await lastTakeover(b);
    if (last?.turn_id === turnId) return last.at;
    if (signal.aborted)
      throw new Error(
        `${b.url}/health never showed the takeover of turn ${turnId}; its last: ${JSON.stringify(last)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: "POST", headers: TENAX_HEADERS, body: JSON.stringify(body) });
}

/** One run started on `a`, `a` killed once its turn runs, followed on `b` to its end. */
async function killOnce(
  a: TenaxGateway,
  b: TenaxGateway,
  settings: TakeoverSettings,
  n: number,
): Promise<KillFigures> {
  const signal = AbortSignal.timeout(KILL_DEADLINE_MS);
  const base = settings.simUrl.replace(/\/v1$/, "");
  const text = "slow words the killed gateway never finishes "
    .repeat(settings.chunks)
    .slice(0, 3 * settings.chunks);
  const scripted = await post(`${base}/__sim/script`, [
    { type: "reply", text, chunk_size: 3, chunk_delay_ms: settings.chunkDelayMs },
  ]);
  if (!scripted.ok) throw new Error(`the simulator refused the script: ${await scripted.text()}`);
  const submitted = await post(`${a.url}/v1/runs`, {
    messages: [{ role: "user", content: `take over run ${n}` }],
  });
  if (submitted.status !== 202)
    throw new Error(`POST /v1/runs: HTTP ${submitted.status} ${await submitted.text()}`);
  const runId = ((await submitted.json()) as { run_id: string }).run_id;
  const events = follow(b, runId, signal);
  // Its reply streaming: A has taken the slow reply, so B's resumed call gets the simulator's quick
  // echo, and the time to the run's end is the takeover's, not the slow reply's.
  await events.next("text");
  const killedWall = Date.now();
  const killed = performance.now();
  a.process.child.kill("SIGKILL");
  const resumed = await events.next("run.resumed");
  const finished = await events.next("run.finished");
  const turnId = String(resumed.data.turn_id);
  return {
    run_id: runId,
    turn_id: turnId,
    takeover_ms: (await takeoverAt(b, turnId, signal)) - killedWall,
    resumed_seen_ms: resumed.at - killed,
    finished_seen_ms: finished.at - killed,
    status: String(finished.data.status),
  };
}

/**
 * `settings.kills` kills of `pair.a`, each taken over by `pair.b`; `restart` starts A again in its
 * home after each (the caller keeps the new process, to stop it at the end).
 */
export async function runTakeovers(
  pair: { a: TenaxGateway; b: TenaxGateway },
  restart: (killed: TenaxGateway) => Promise<TenaxGateway>,
  settings: TakeoverSettings,
  log: (line: string) => void,
): Promise<TakeoverResult> {
  const kills: KillFigures[] = [];
  const failures: string[] = [];
  let a = pair.a;
  for (let n = 1; n <= settings.kills; n++) {
    try {
      const k = await killOnce(a, pair.b, settings, n);
      kills.push(k);
      if (k.status !== "completed") failures.push(`kill ${n}: run ${k.run_id} ended ${k.status}`);
      log(
        `  kill ${n}/${settings.kills}: taken over after ${k.takeover_ms} ms, run.resumed read after ` +
          `${k.resumed_seen_ms.toFixed(0)} ms, run.finished after ${k.finished_seen_ms.toFixed(0)} ms (${k.status})`,
      );
    } catch (error) {
      failures.push(`kill ${n}: ${error instanceof Error ? error.message : String(error)}`);
      log(`  kill ${n}/${settings.kills} failed: ${failures.at(-1)}`);
    }
    a.process.child.kill("SIGKILL");
    await a.process.exited;
    a = await restart(a);
  }
  const { simUrl: _, ...shown } = settings;
  return { settings: shown, kills, failures };
}
