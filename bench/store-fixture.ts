// Stores of a given size for the benchmarks, built through the Store API (batched appends,
// synchronous normal) and cached under bench/out by size, so that a rerun starts in seconds.
// A store counts as built only once its meta.json is written; a half-built one is rebuilt.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ProfilePaths, profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { NewMessage } from "../src/store/store-types.js";
import { COMMON_RANKS, Corpus, MEDIUM_RANKS, RARE_FROM } from "./corpus.js";

/** Bump when the generator changes, so cached stores of the old shape are not reused. */
const FIXTURE_VERSION = 1;
const BATCH = 1000;
const FLUSH_EVERY = 50_000;

export interface FixtureMeta {
  version: number;
  messages: number;
  sessions: number;
  /** A session with exactly 200 messages (the first one generated). */
  session_200: string;
  /** Words and phrases seen in stored messages, for the search query mix. */
  samples: { rare: string[]; medium: string[]; common: string[]; phrases: string[] };
  build: { append_s: number; index_s: number; total_s: number; messages_per_s: number };
}

export interface Fixture {
  paths: ProfilePaths;
  meta: FixtureMeta;
  cached: boolean;
}

export function fixtureDir(outDir: string, messages: number): string {
  return join(outDir, "stores", `messages-${messages}-v${FIXTURE_VERSION}`);
}

/** The cached store of this size, or a new one built now. */
export async function ensureFixture(
  outDir: string,
  messages: number,
  log: (line: string) => void,
): Promise<Fixture> {
  const dir = fixtureDir(outDir, messages);
  const metaFile = join(dir, "meta.json");
  const paths = profilePaths(dir, "default");
  if (existsSync(metaFile)) {
    const meta = JSON.parse(readFileSync(metaFile, "utf8")) as FixtureMeta;
    if (meta.version === FIXTURE_VERSION && meta.messages === messages) return { paths, meta, cached: true };
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const meta = await buildFixture(paths, messages, log);
  writeFileSync(metaFile, `${JSON.stringify(meta, null, 2)}\n`);
  return { paths, meta, cached: false };
}

async function buildFixture(
  paths: ProfilePaths,
  total: number,
  log: (line: string) => void,
): Promise<FixtureMeta> {
  const corpus = new Corpus(0xbe4c + total);
  const store = await openStore(paths, {
    synchronous: "normal",
    rereadPagesOnWrite: "off",
    integrityCheckTimeoutMs: 0,
  });
  const samples: FixtureMeta["samples"] = { rare: [], medium: [], common: [], phrases: [] };
  const sampleEvery = Math.max(1, Math.floor(total / 400));
  let appendMs = 0;
  let indexMs = 0;
  let written = 0;
  let sessions = 0;
  let session200 = "";
  let batch: NewMessage[] = [];
  const started = performance.now();

  const flushIndex = () => {
    const t = performance.now();
    store.index.flush();
    indexMs += performance.now() - t;
  };
  const writeBatch = async () => {
    if (batch.length === 0) return;
    const t = performance.now();
    await store.appendMessages(batch);
    appendMs += performance.now() - t;
    const before = written;
    written += batch.length;
    batch = [];
    if (Math.floor(written / FLUSH_EVERY) > Math.floor(before / FLUSH_EVERY)) flushIndex();
    if (Math.floor(written / 100_000) > Math.floor(before / 100_000)) {
      log(`  built ${written.toLocaleString("en")} of ${total.toLocaleString("en")} messages`);
    }
  };

  while (written + batch.length < total) {
    const size = sessions === 0 ? 200 : corpus.int(20, 200);
    const drafts = corpus.session(Math.min(size, total - written - batch.length));
    // The session row must exist before a batch holding its messages is written.
    const t = performance.now();
    const id = await store.createSession({ title: corpus.text(30), source: "bench", model: "bench-model" });
    appendMs += performance.now() - t;
    if (sessions === 0) session200 = id;
    sessions++;
    for (const draft of drafts) {
      batch.push({ ...draft, session_id: id });
      if ((written + batch.length) % sampleEvery === 0) sample(corpus, draft.content, samples);
      if (batch.length >= BATCH) await writeBatch();
    }
  }
  await writeBatch();
  flushIndex();
  await releaseStore(store);
  const totalS = (performance.now() - started) / 1000;
  return {
    version: FIXTURE_VERSION,
    messages: total,
    sessions,
    session_200: session200,
    samples,
    build: {
      append_s: appendMs / 1000,
      index_s: indexMs / 1000,
      total_s: totalS,
      messages_per_s: total / ((appendMs + indexMs) / 1000),
    },
  };
}

/** Keep words of each frequency class, and a phrase, that really occur in a stored message. */
function sample(corpus: Corpus, content: unknown, into: FixtureMeta["samples"]): void {
  if (typeof content !== "string") return;
  const words = content.toLowerCase().match(/[a-z]+/g) ?? [];
  const push = (list: string[], word: string | undefined) => {
    if (word !== undefined && list.length < 200 && !list.includes(word)) list.push(word);
  };
  push(
    into.rare,
    words.find((w) => (corpus.rank(w) ?? -1) >= RARE_FROM),
  );
  push(
    into.medium,
    words.find((w) => inRanks(corpus.rank(w), MEDIUM_RANKS)),
  );
  push(
    into.common,
    words.find((w) => inRanks(corpus.rank(w), COMMON_RANKS)),
  );
  // The same split as the index's tokenizer on this ASCII text, so the phrase really occurs.
  const tokens = content.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  if (tokens.length >= 3) {
    const n = corpus.rng() < 0.3 ? 3 : 2;
    const at = corpus.int(0, tokens.length - n);
    push(into.phrases, tokens.slice(at, at + n).join(" "));
  }
}

function inRanks(rank: number | undefined, [from, to]: readonly [number, number]): boolean {
  return rank !== undefined && rank >= from && rank < to;
}

/** A private copy of a fixture for a benchmark that writes to it. */
export function copyFixture(fixture: Fixture, toDir: string): ProfilePaths {
  rmSync(toDir, { recursive: true, force: true });
  mkdirSync(toDir, { recursive: true });
  const to = profilePaths(toDir, "default");
  for (const [from, dest] of [
    [fixture.paths.state, to.state],
    [fixture.paths.search, to.search],
  ] as const) {
    copyFileSync(from, dest);
    for (const suffix of ["-wal", "-shm"]) {
      if (existsSync(from + suffix)) copyFileSync(from + suffix, dest + suffix);
    }
  }
  return to;
}
