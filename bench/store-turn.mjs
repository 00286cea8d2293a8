// The store's share of one agent turn, through the public API of a built checkout given as
// argv[2]: start a turn with its question, read the transcript, the session and a record, append
// the answer, end the turn (three durable commits). Prints per-turn latency quantiles (ms) and CPU
// per turn. It uses only what every version's API has (awaiting a synchronous read is harmless), so
// two checkouts are compared side by side, alternating, in one run:
//   node bench/store-turn.mjs /path/to/old-checkout 1000; node bench/store-turn.mjs . 1000
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(process.argv[2] ?? ".");
const turns = Number(process.argv[3] ?? 2000);
const { openStore, releaseStore } = await import(join(root, "dist/store/registry.js"));
const { profilePaths } = await import(join(root, "dist/profile/paths.js"));
const home = mkdtempSync(join(tmpdir(), "store-turn-"));
const paths = profilePaths(home, "default");
const { mkdirSync } = await import("node:fs");
mkdirSync(paths.dir, { recursive: true });
mkdirSync(paths.spool, { recursive: true });
const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
let session = await store.createSession({ title: "bench" });
const times = [];
let cpu0 = null;
for (let i = 0; i < turns + 200; i++) {
  if (i === 200) cpu0 = process.cpuUsage();
  if (i % 10 === 0) session = await store.createSession({ title: "bench" });
  const t0 = process.hrtime.bigint();
  const turn = await store.startTurn(session, 60000, "pid:1", { role: "user", content: `question ${i}` });
  const messages = await store.getMessages(session);
  const s = await store.getSession(session);
  await store.getRecord("compression", session);
  await store.appendMessage({
    session_id: session,
    role: "assistant",
    content: `answer ${i} ${messages.length} ${s.id}`,
    turn_id: turn,
  });
  await store.updateTurn({ id: turn, status: "completed", ended_at: Date.now() });
  const dt = Number(process.hrtime.bigint() - t0) / 1e6;
  if (i >= 200) times.push(dt);
}
const cpu = process.cpuUsage(cpu0);
times.sort((a, b) => a - b);
const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
console.log(
  JSON.stringify({
    root,
    turns,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    cpu_us_per_turn: (cpu.user + cpu.system) / turns,
  }),
);
await releaseStore(store);
