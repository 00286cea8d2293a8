// Full-text search latency through Store.search(query, { limit: 20 }): a mix of single rare,
// medium and common words, two-word AND queries and quoted phrases, all drawn from words that
// occur in the stored messages. Every query runs once to warm the caches, then `rounds` more times
// in a shuffled order; percentiles are per kind and over the whole mix (equal parts of each kind).
import { seededRandom } from "../src/core/deps.js";
import type { StoreReads } from "../src/store/port.js";
import { type Latency, latency, median, shuffle } from "./stats.js";
import type { FixtureMeta } from "./store-fixture.js";

export const QUERY_KINDS = ["rare", "medium", "common", "two_words", "phrase"] as const;
export type QueryKind = (typeof QUERY_KINDS)[number];

export interface BenchQuery {
  kind: QueryKind;
  text: string;
}

export interface QueryFigure extends BenchQuery {
  median_ms: number;
  hits: number;
}

export interface SearchResultSet {
  queries_per_kind: number;
  rounds: number;
  by_kind: Record<QueryKind, Latency>;
  overall: Latency;
  per_query: QueryFigure[];
}

/** The query mix: `perKind` queries of each kind, from the words sampled when the store was built. */
export function queryMix(samples: FixtureMeta["samples"], perKind: number): BenchQuery[] {
  const pick = (list: readonly string[], i: number) => list[i % Math.max(1, list.length)] ?? "the";
  const out: BenchQuery[] = [];
  for (let i = 0; i < perKind; i++) {
    out.push({ kind: "rare", text: pick(samples.rare, i) });
    out.push({ kind: "medium", text: pick(samples.medium, i) });
    out.push({ kind: "common", text: pick(samples.common, i) });
    // Two words that must both occur: medium and medium, common and medium, common and common.
    const pairs = [
      [pick(samples.medium, 2 * i + 1), pick(samples.medium, 2 * i + 2)],
      [pick(samples.common, i + 1), pick(samples.medium, 3 * i + 5)],
      [pick(samples.common, i + 2), pick(samples.common, i + 7)],
    ] as const;
    const [a, b] = pairs[i % pairs.length] ?? ["the", "and"];
    out.push({ kind: "two_words", text: `${a} ${b}` });
    out.push({ kind: "phrase", text: `"${pick(samples.phrases, i)}"` });
  }
  return out;
}

export async function runSearchBench(
  store: StoreReads,
  queries: readonly BenchQuery[],
  rounds: number,
  log: (line: string) => void,
): Promise<SearchResultSet> {
  const random = seededRandom(0x5ea7);
  const samples = new Map<BenchQuery, number[]>(queries.map((q) => [q, []]));
  const hits = new Map<BenchQuery, number>();
  for (const q of queries) hits.set(q, (await store.search(q.text, { limit: 20 })).hits.length);
  for (let round = 1; round <= rounds; round++) {
    for (const q of shuffle([...queries], random)) {
      const started = performance.now();
      await store.search(q.text, { limit: 20 });
      samples.get(q)?.push(performance.now() - started);
    }
    if (round % 5 === 0 || round === rounds) log(`  search round ${round} of ${rounds} done`);
  }
  const ofKind = (kind: QueryKind) =>
    queries.filter((q) => q.kind === kind).flatMap((q) => samples.get(q) ?? []);
  const byKind = Object.fromEntries(QUERY_KINDS.map((k) => [k, latency(ofKind(k))])) as Record<
    QueryKind,
    Latency
  >;
  return {
    queries_per_kind: queries.length / QUERY_KINDS.length,
    rounds,
    by_kind: byKind,
    overall: latency([...samples.values()].flat()),
    per_query: queries.map((q) => ({
      ...q,
      median_ms: median(samples.get(q) ?? []),
      hits: hits.get(q) ?? 0,
    })),
  };
}
