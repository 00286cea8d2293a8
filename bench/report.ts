// Plain-text tables for the terminal, and the aims each run is judged against.
import type { RouterHttpResult } from "./router-overhead.js";
import type { SearchResultSet } from "./search-latency.js";
import type { WriteRow } from "./write-throughput.js";

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function int(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en") : "-";
}

export function ms(n: number): string {
  if (!Number.isFinite(n)) return "-";
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
}

export interface Aim {
  aim: string;
  met: boolean;
  /** The settings under which it was met, or the best figure when it was not. */
  detail: string;
}

const label = (r: WriteRow) => `${r.mode}, synchronous=${r.synchronous}, reread=${r.reread}`;

export function judgeAims(
  rows: readonly WriteRow[] | null,
  search: SearchResultSet | null,
  scale: number,
): Aim[] {
  const aims: Aim[] = [];
  const rateAim = (aim: string, modes: string[], floor: number) => {
    const candidates = (rows ?? []).filter((r) => modes.includes(r.mode));
    if (candidates.length === 0) return;
    const met = candidates.filter((r) => r.append_per_s >= floor);
    const best = [...candidates].sort((a, b) => b.append_per_s - a.append_per_s)[0];
    aims.push({
      aim,
      met: met.length > 0,
      detail:
        met.length > 0
          ? `met with ${met.map((r) => `${label(r)} (${int(r.append_per_s)}/s)`).join("; ")}`
          : `best ${best ? `${label(best)}: ${int(best.append_per_s)}/s` : "-"}`,
    });
  };
  rateAim("10,000+ messages/s, one transaction per message", ["single"], 10_000);
  rateAim("100,000+ messages/s, batched", ["batch100", "batch1000"], 100_000);
  if (search !== null) {
    const p95 = search.overall.p95_ms;
    aims.push({
      aim: "search p95 < 20 ms on 1,000,000 messages",
      met: p95 < 20 && scale >= 1_000_000,
      detail: `overall p95 ${ms(p95)} ms on ${int(scale)} messages${scale < 1_000_000 ? " (not the 1M scale)" : ""}`,
    });
  }
  return aims;
}

/**
 * The issue's aim for the resilience layer: under 0.2 ms added per call over the bare SDK call,
 * judged on the paired median (robust to a neighbour's bursts), for every way of calling it.
 */
export function judgeRouterAim(r: RouterHttpResult): Aim {
  const p = r.paired_added_p50_ms;
  const v = r.by_variant;
  const worst = Math.max(p.memory_over_sdk, p.sqlite_over_sdk, p.signal_over_sdk);
  const mean = (k: "router_memory" | "router_sqlite") => (v[k].mean_ms - v.sdk.mean_ms).toFixed(3);
  return {
    aim: "resilience layer adds < 0.2 ms per call",
    met: worst < 0.2,
    detail:
      `paired median over the bare SDK: memory ledger +${p.memory_over_sdk.toFixed(3)} ms, ` +
      `SQLite ledger +${p.sqlite_over_sdk.toFixed(3)} ms, with signal +${p.signal_over_sdk.toFixed(3)} ms ` +
      `(means +${mean("router_memory")}, +${mean("router_sqlite")} ms)`,
  };
}
