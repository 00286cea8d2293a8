// Spans of `records` keys that SQL read without an error, in SQLite's own order of (kind, key):
// a key inside one that SQL did not return does not exist. Text compares as its UTF-8 bytes, as
// SQLite's BINARY collation compares a UTF-8 store's text (the encoding every Tenax store has).
import type { RecordKey } from "./row-shapes.js";

export function compareKeys(a: RecordKey, b: RecordKey): number {
  return (
    Buffer.compare(Buffer.from(a.kind, "utf8"), Buffer.from(b.kind, "utf8")) ||
    Buffer.compare(Buffer.from(a.key, "utf8"), Buffer.from(b.key, "utf8"))
  );
}

/** An inclusive span; a null end is open (before the first key, or past the last). */
interface Span {
  lo: RecordKey | null;
  hi: RecordKey | null;
}

export class KeyRanges {
  private readonly spans: Span[] = [];

  add(lo: RecordKey | null, hi: RecordKey | null): void {
    if (lo !== null && hi !== null && compareKeys(lo, hi) > 0) return;
    this.spans.push({ lo, hi });
  }

  has(key: RecordKey): boolean {
    return this.spans.some(
      (s) => (s.lo === null || compareKeys(s.lo, key) <= 0) && (s.hi === null || compareKeys(key, s.hi) <= 0),
    );
  }

  /** Every key there could be lies in a span. */
  get complete(): boolean {
    const sorted = [...this.spans].sort((a, b) =>
      a.lo === null ? -1 : b.lo === null ? 1 : compareKeys(a.lo, b.lo),
    );
    if (sorted[0]?.lo !== null) return false;
    let reach: RecordKey | null | undefined; // undefined: nothing reached yet
    for (const span of sorted) {
      if (reach === null) return true;
      // Between two distinct keys there is always room for another, so spans must overlap.
      if (reach !== undefined && span.lo !== null && compareKeys(span.lo, reach) > 0) return false;
      if (span.hi === null || reach === undefined || compareKeys(span.hi, reach) > 0) reach = span.hi;
    }
    return reach === null;
  }
}
