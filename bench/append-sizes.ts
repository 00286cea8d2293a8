// Batched appends at fixed message sizes: how much of the batched rate is the bytes SQLite must
// write. Fresh store per size, `synchronous: normal`, re-read on, batches of 1,000 over sessions
// of 100 messages created as they are due, through the real Store API.
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { NewMessage } from "../src/store/store.js";
import { median } from "./stats.js";

export interface SizeRow {
  chars: number;
  messages_per_s: number;
  content_mib_per_s: number;
}

const SIZES = [200, 700, 1500] as const;

export async function runAppendSizes(workDir: string, messages: number, rounds: number): Promise<SizeRow[]> {
  const rows: SizeRow[] = [];
  for (const chars of SIZES) {
    const rates: number[] = [];
    for (let round = 0; round < rounds; round++) rates.push(await oneRun(workDir, chars, messages));
    const rate = median(rates);
    rows.push({ chars, messages_per_s: rate, content_mib_per_s: (rate * chars) / 1048576 });
  }
  return rows;
}

async function oneRun(workDir: string, chars: number, messages: number): Promise<number> {
  const home = mkdtempSync(join(workDir, "sizes-"));
  try {
    const store = await openStore(profilePaths(home, "default"), {
      integrityCheckTimeoutMs: 0,
      synchronous: "normal",
    });
    const words = "the agent read the file and wrote a patch for the failing test ";
    const text = (i: number) => `${i} ${words.repeat(Math.ceil(chars / words.length))}`.slice(0, chars);
    let session = "";
    let batch: NewMessage[] = [];
    const started = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) {
      if (i % 100 === 0) session = await store.createSession();
      batch.push({ session_id: session, role: i % 2 === 0 ? "user" : "assistant", content: text(i) });
      if (batch.length === 1000) {
        await store.appendMessages(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await store.appendMessages(batch);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    store.index.stop(); // the index flush is measured elsewhere
    await releaseStore(store);
    return messages / seconds;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
