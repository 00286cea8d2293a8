// Messages appended per second through Store.appendMessage (one transaction each) and
// Store.appendMessages (batches of 100 and 1000), under each durability level and with the page
// re-read on and off. Every trial starts from a fresh copy of the same seeded store; the
// configurations take turns in a shuffled order each round, so drift on the machine spreads over
// all of them, and each figure is the median over the rounds.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { seededRandom } from "../src/core/deps.js";
import type { Synchronous } from "../src/store/open-database.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import type { NewMessage } from "../src/store/store-types.js";
import { Corpus, type MessageDraft } from "./corpus.js";
import { median, shuffle } from "./stats.js";
import { copyFixture, type Fixture } from "./store-fixture.js";

/**
 * single_flush: one transaction per message, each followed by store.index.flush(), which is what
 * the flush the store schedules after a write amounts to when the event loop idles between messages.
 */
export type WriteMode = "single" | "single_flush" | "batch100" | "batch1000";

export interface WriteConfig {
  mode: WriteMode;
  synchronous: Synchronous;
  reread: boolean;
}

export interface WriteTrial {
  messages: number;
  append_s: number;
  flush_messages: number;
  flush_s: number;
}

export interface WriteRow extends WriteConfig {
  trials: WriteTrial[];
  /** Median over the rounds of messages per second while appending. */
  append_per_s: number;
  /** Median of messages moved into the search index per second by store.index.flush(). */
  flush_per_s: number;
  /** Median of messages per second counting the append and the flush. */
  end_to_end_per_s: number;
}

export interface WriteOptions {
  rounds: number;
  /** A trial stops after this many seconds of appending... */
  trialSeconds: number;
  /** ...or this many messages, whichever comes first. */
  trialMessages: number;
  workDir: string;
  log: (line: string) => void;
}

export interface WriteResult {
  base_messages: number;
  options: Omit<WriteOptions, "log" | "workDir">;
  rows: WriteRow[];
  /** Per round, appends/s with the re-read off divided by with it on; the median over rounds. */
  reread_cost: { mode: WriteMode; synchronous: Synchronous; speedup_without_reread: number }[];
}

export const WRITE_CONFIGS: readonly WriteConfig[] = [
  ...(["single", "batch100", "batch1000"] as const).flatMap((mode) =>
    (["full", "normal"] as const).flatMap((synchronous) =>
      [true, false].map((reread) => ({ mode, synchronous, reread })),
    ),
  ),
  { mode: "single_flush", synchronous: "full", reread: true },
  { mode: "single_flush", synchronous: "normal", reread: true },
];

const POOL = 20_000;

/** Pre-generated messages and session sizes, so that generating text is not part of a trial. */
interface Pool {
  drafts: MessageDraft[];
  sessionSizes: number[];
}

function makePool(): Pool {
  const corpus = new Corpus(0x5eed);
  const drafts: MessageDraft[] = [];
  const sessionSizes: number[] = [];
  while (drafts.length < POOL) {
    const size = corpus.int(20, 200);
    sessionSizes.push(size);
    drafts.push(...corpus.session(size));
  }
  return { drafts, sessionSizes };
}

/** Hands out messages in session order, creating each session when its first message is due. */
class Feeder {
  private next = 0;
  private sessionIndex = 0;
  private left = 0;
  private session = "";

  constructor(
    private readonly store: Store,
    private readonly pool: Pool,
  ) {}

  async take(count: number): Promise<NewMessage[]> {
    const out: NewMessage[] = [];
    while (out.length < count) {
      if (this.left === 0) {
        this.session = await this.store.createSession({ title: "bench", source: "bench" });
        this.left = this.pool.sessionSizes[this.sessionIndex++ % this.pool.sessionSizes.length] ?? 100;
      }
      const draft = this.pool.drafts[this.next++ % this.pool.drafts.length] as MessageDraft;
      out.push({ ...draft, session_id: this.session });
      this.left--;
    }
    return out;
  }
}

async function runTrial(
  config: WriteConfig,
  fixture: Fixture,
  pool: Pool,
  options: WriteOptions,
  n: number,
): Promise<WriteTrial> {
  const dir = join(options.workDir, `write-${n}`);
  const paths = copyFixture(fixture, dir);
  const store = await openStore(paths, {
    synchronous: config.synchronous,
    rereadPagesOnWrite: config.reread ? "always" : "off",
    integrityCheckTimeoutMs: 0,
  });
  try {
    const feeder = new Feeder(store, pool);
    const batch = config.mode === "batch100" ? 100 : config.mode === "batch1000" ? 1000 : 1;
    const limitMs = options.trialSeconds * 1000;
    let messages = 0;
    const started = performance.now();
    // No await here yields to the event loop (each write resolves at once), so the index flush the
    // store schedules after a write cannot run inside the timed loop; it is timed on its own below.
    while (messages < options.trialMessages && performance.now() - started < limitMs) {
      if (batch === 1) {
        const [message] = await feeder.take(1);
        await store.appendMessage(message as NewMessage);
        if (config.mode === "single_flush") store.index.flush();
        messages++;
      } else {
        const messagesIn = await feeder.take(Math.min(batch, options.trialMessages - messages));
        await store.appendMessages(messagesIn);
        messages += messagesIn.length;
      }
    }
    const appendMs = performance.now() - started;
    const flushStarted = performance.now();
    const flushed = store.index.flush();
    const flushMs = performance.now() - flushStarted;
    return { messages, append_s: appendMs / 1000, flush_messages: flushed, flush_s: flushMs / 1000 };
  } finally {
    await releaseStore(store);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runWriteBench(fixture: Fixture, options: WriteOptions): Promise<WriteResult> {
  const pool = makePool();
  const random = seededRandom(0x0dde);
  const trials = new Map<WriteConfig, WriteTrial[]>(WRITE_CONFIGS.map((c) => [c, []]));
  let n = 0;
  for (let round = 1; round <= options.rounds; round++) {
    const order = shuffle([...WRITE_CONFIGS], random);
    for (const config of order) {
      const trial = await runTrial(config, fixture, pool, options, n++);
      trials.get(config)?.push(trial);
    }
    options.log(`  write round ${round} of ${options.rounds} done`);
  }
  const rows: WriteRow[] = WRITE_CONFIGS.map((config) => {
    const list = trials.get(config) ?? [];
    return {
      ...config,
      trials: list,
      append_per_s: median(list.map((t) => t.messages / t.append_s)),
      // single_flush flushes inside the timed loop: nothing is left for the flush after it.
      flush_per_s:
        config.mode === "single_flush" ? Number.NaN : median(list.map((t) => t.flush_messages / t.flush_s)),
      end_to_end_per_s: median(list.map((t) => t.messages / (t.append_s + t.flush_s))),
    };
  });
  const rate = (t: WriteTrial) => t.messages / t.append_s;
  const rereadCost = WRITE_CONFIGS.flatMap((on) => {
    const off = WRITE_CONFIGS.find(
      (c) => !c.reread && c.mode === on.mode && c.synchronous === on.synchronous,
    );
    if (!on.reread || off === undefined) return [];
    const a = trials.get(on) ?? [];
    const b = trials.get(off) ?? [];
    const ratios = a.map((t, i) => rate(b[i] ?? t) / rate(t));
    return [{ mode: on.mode, synchronous: on.synchronous, speedup_without_reread: median(ratios) }];
  });
  const { log: _log, workDir: _dir, ...shown } = options;
  return { base_messages: fixture.meta.messages, options: shown, rows, reread_cost: rereadCost };
}
