// Why search misses its latency aim, with numbers: how many messages each query matches, how much
// of Store.search is the FTS5 query itself, and how alternative orderings of the same query would
// fare on the same index. The alternatives run as raw SQL on a read-only connection to search.db;
// they are evidence for a change to src/store, not a measurement of the store as it is.
import Database from "better-sqlite3";
import type { ProfilePaths } from "../src/profile/paths.js";
import { toFtsQuery } from "../src/store/search-index.js";
import type { Store } from "../src/store/store.js";
import { int, ms, table } from "./report.js";
import { QUERY_KINDS, type QueryKind, type SearchResultSet } from "./search-latency.js";
import { median, quantile } from "./stats.js";

const VARIANTS = {
  current: "ORDER BY rank (as SearchIndex.query does)",
  bm25: "ORDER BY bm25(fts): the same order without the rank column",
  window_50k: "bm25 over messages with rowid > newest - 50,000",
  newest_2k_ranked: "bm25 over the newest 2,000 matches",
  newest: "ORDER BY rowid DESC: newest first, no ranking",
  hybrid_2k: "bm25 if every word matches <= 2,000 messages, else newest first",
  hybrid_10k: "bm25 if every word matches <= 10,000 messages, else newest first",
} as const;
type Variant = keyof typeof VARIANTS;
const VARIANT_NAMES = Object.keys(VARIANTS) as Variant[];

export interface QueryDiagnosis {
  kind: QueryKind;
  text: string;
  expression: string;
  /** Messages the query matches. */
  matches: number;
  /** Store.search median from the main run, and the FTS5 query alone (SearchIndex.query). */
  store_search_ms: number;
  fts_query_ms: number;
  variants_ms: Record<Variant, number>;
}

export interface SearchDiagnosis {
  index: { segments: number; newest_rowid: number };
  variants: typeof VARIANTS;
  per_query: QueryDiagnosis[];
  /** Per kind and overall: the p95 over the queries' median latencies, for each variant. */
  p95_of_query_medians: Record<QueryKind | "overall", Record<Variant, number>>;
  /** Median over the common single-word queries of (FTS5 query time / matches), in microseconds. */
  common_cost_us_per_match: number;
  lines: string[];
}

const RUNS = 3;

function timeMedian(fn: () => unknown, runs = RUNS): number {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    fn();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

export function diagnoseSearch(
  store: Store,
  paths: ProfilePaths,
  search: SearchResultSet,
  log: (line: string) => void,
): SearchDiagnosis {
  const db = new Database(paths.search, { readonly: true, fileMustExist: true });
  try {
    const segments = db.prepare("SELECT count(DISTINCT segid) FROM fts_idx").pluck().get() as number;
    const newest = (db.prepare("SELECT max(id) FROM fts_docsize").pluck().get() as number | null) ?? 0;
    const sql = {
      count: db.prepare("SELECT count(*) FROM fts WHERE fts MATCH ?").pluck(),
      rank: db.prepare("SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 20"),
      bm25: db.prepare("SELECT rowid, bm25(fts) AS score FROM fts WHERE fts MATCH ? ORDER BY score LIMIT 20"),
      window: db.prepare(
        "SELECT rowid, bm25(fts) AS score FROM fts WHERE fts MATCH ? AND rowid > ? ORDER BY score LIMIT 20",
      ),
      newestRanked: db.prepare(
        `SELECT rowid, score FROM (SELECT rowid, bm25(fts) AS score FROM fts WHERE fts MATCH ?
           ORDER BY rowid DESC LIMIT 2000) ORDER BY score LIMIT 20`,
      ),
      newest: db.prepare("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT 20"),
      probe: db.prepare("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ?").pluck(),
    };
    // Ranking needs bm25's document frequency of every phrase, which FTS5 finds by walking all of
    // the phrase's matches, and that walk reads the whole list of each of its words. So probe each
    // word: reading its newest k+1 matches is cheap and tells whether the walk would be long.
    const hybrid = (expression: string, k: number) => {
      const words = new Set(expression.match(/[^\s"]+/g)?.filter((w) => w !== "AND") ?? []);
      const common = [...words].some((w) => sql.probe.all(`"${w}"`, k + 1).length > k);
      return common ? sql.newest.all(expression) : sql.bm25.all(expression);
    };
    const run: Record<Variant, (e: string) => unknown> = {
      current: (e) => store.index.index.query(e, 20),
      bm25: (e) => sql.bm25.all(e),
      window_50k: (e) => sql.window.all(e, newest - 50_000),
      newest_2k_ranked: (e) => sql.newestRanked.all(e),
      newest: (e) => sql.newest.all(e),
      hybrid_2k: (e) => hybrid(e, 2000),
      hybrid_10k: (e) => hybrid(e, 10_000),
    };
    const perQuery: QueryDiagnosis[] = [];
    for (const q of search.per_query) {
      const expression = toFtsQuery(q.text);
      if (expression === null) continue;
      const variants = Object.fromEntries(
        VARIANT_NAMES.map((v) => [v, timeMedian(() => run[v](expression))]),
      ) as Record<Variant, number>;
      perQuery.push({
        kind: q.kind,
        text: q.text,
        expression,
        matches: sql.count.get(expression) as number,
        store_search_ms: q.median_ms,
        fts_query_ms: variants.current,
        variants_ms: variants,
      });
    }
    log(`  diagnosed ${perQuery.length} queries`);

    const p95 = (list: QueryDiagnosis[], pick: (d: QueryDiagnosis) => number) =>
      quantile(list.map(pick), 0.95);
    const byKind = Object.fromEntries(
      [...QUERY_KINDS, "overall" as const].map((kind) => {
        const list = kind === "overall" ? perQuery : perQuery.filter((d) => d.kind === kind);
        return [kind, Object.fromEntries(VARIANT_NAMES.map((v) => [v, p95(list, (d) => d.variants_ms[v])]))];
      }),
    ) as SearchDiagnosis["p95_of_query_medians"];
    const common = perQuery.filter((d) => d.kind === "common" && d.matches > 0);
    const costUs = median(common.map((d) => (d.fts_query_ms * 1000) / d.matches));
    const share = median(perQuery.map((d) => d.fts_query_ms / Math.max(d.store_search_ms, 1e-9)));

    const lines = [
      `\nsearch diagnosis: the index has ${segments} segments; newest message id ${int(newest)}`,
      table(
        ["kind", "median matches", "max matches", "median ms", "FTS share"],
        QUERY_KINDS.map((kind) => {
          const list = perQuery.filter((d) => d.kind === kind);
          return [
            kind,
            int(median(list.map((d) => d.matches))),
            int(Math.max(...list.map((d) => d.matches))),
            ms(median(list.map((d) => d.store_search_ms))),
            `${Math.round(median(list.map((d) => d.fts_query_ms / Math.max(d.store_search_ms, 1e-9))) * 100)}%`,
          ];
        }),
      ),
      `common single words: ${costUs.toFixed(2)} us per matching message in the FTS5 query; ` +
        `the FTS5 query is a median ${Math.round(share * 100)}% of Store.search`,
      "\np95 over the queries' median ms, same queries, other orderings (raw SQL on search.db):",
      table(
        ["variant", ...QUERY_KINDS, "overall"],
        VARIANT_NAMES.map((v) => [v, ...[...QUERY_KINDS, "overall" as const].map((k) => ms(byKind[k][v]))]),
      ),
      ...VARIANT_NAMES.map((v) => `  ${v}: ${VARIANTS[v]}`),
    ];
    return {
      index: { segments, newest_rowid: newest },
      variants: VARIANTS,
      per_query: perQuery,
      p95_of_query_medians: byKind,
      common_cost_us_per_match: costUs,
      lines,
    };
  } finally {
    db.close();
  }
}
