// Sets of rowids kept as sorted, merged ranges: the ranges SQL read without an error (its word on
// them is final) and the sorted rowids an index listed (to skip ranges that held no row).

export class RowidRanges {
  private ranges: [number, number][] = [];
  private sorted = true;

  /** Add the inclusive range [lo, hi]; infinite ends are allowed. */
  add(lo: number, hi: number): void {
    if (lo > hi) return;
    this.ranges.push([lo, hi]);
    this.sorted = false;
  }

  has(rowid: number): boolean {
    const ranges = this.normalized();
    let lo = 0;
    let hi = ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const range = ranges[mid];
      if (range === undefined) return false;
      if (rowid < range[0]) hi = mid - 1;
      else if (rowid > range[1]) lo = mid + 1;
      else return true;
    }
    return false;
  }

  private normalized(): [number, number][] {
    if (this.sorted) return this.ranges;
    const sorted = [...this.ranges].sort((a, b) => a[0] - b[0]);
    const merged: [number, number][] = [];
    for (const [lo, hi] of sorted) {
      const last = merged[merged.length - 1];
      if (last !== undefined && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
      else merged.push([lo, hi]);
    }
    this.ranges = merged;
    this.sorted = true;
    return merged;
  }
}

/** Sorted distinct rowids with a "does [lo, hi] hold any?" test. */
export class SortedRowids {
  private readonly values: number[];

  constructor(rowids: Iterable<number>) {
    this.values = [...new Set(rowids)].sort((a, b) => a - b);
  }

  get size(): number {
    return this.values.length;
  }

  get min(): number | undefined {
    return this.values[0];
  }

  get max(): number | undefined {
    return this.values[this.values.length - 1];
  }

  anyIn(lo: number, hi: number): boolean {
    // The first value >= lo, by binary search.
    let a = 0;
    let b = this.values.length;
    while (a < b) {
      const mid = (a + b) >> 1;
      if ((this.values[mid] ?? Number.POSITIVE_INFINITY) < lo) a = mid + 1;
      else b = mid;
    }
    const first = this.values[a];
    return first !== undefined && first <= hi;
  }
}
