// Following a cell's overflow chain to its whole payload. The pages may be garbage: a chain that
// leaves the file, loops, runs into a free or b-tree page, or does not end where its size says is
// broken, and the payload is then not read at all.
import type { PayloadCell } from "./btree-page.js";
import type { PageImage } from "./page-image.js";

/** Pages an overflow chain must not enter: free pages and b-tree pages. */
export interface NotOverflow {
  free: Set<number>;
  btree: Set<number>;
}

/**
 * Follow an overflow chain; returns the whole payload and the pages used, or null if it breaks.
 * A real overflow page never parses as a b-tree page (its first bytes are a small page number),
 * so a chain that runs into one is damaged.
 */
export function readPayload(
  image: PageImage,
  cell: PayloadCell,
  not: NotOverflow,
): { payload: Uint8Array; pages: number[] } | null {
  if (cell.overflow === 0) return { payload: cell.local, pages: [] };
  const payload = Buffer.alloc(cell.payloadSize);
  Buffer.from(cell.local).copy(payload, 0);
  let filled = cell.local.length;
  const pages: number[] = [];
  const seen = new Set<number>();
  let at = cell.overflow;
  const perPage = image.usable - 4;
  while (filled < cell.payloadSize) {
    if (at < 2 || at > image.pageCount || not.free.has(at) || not.btree.has(at) || seen.has(at)) return null;
    seen.add(at);
    const page = image.page(at);
    if (page === null) return null;
    const take = Math.min(perPage, cell.payloadSize - filled);
    const next = page.readUInt32BE(0);
    // A zeroed page reads as a chain's valid end; text is never a page of NUL bytes.
    if (next === 0 && isZero(page, 4, 4 + take)) return null;
    page.copy(payload, filled, 4, 4 + take);
    filled += take;
    pages.push(at);
    at = next;
  }
  // SQLite ends every chain with 0; the last page's pointer is the one thing it never reads back.
  return at === 0 ? { payload, pages } : null;
}

function isZero(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] !== 0) return false;
  return true;
}
