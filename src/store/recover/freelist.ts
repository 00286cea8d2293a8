// The freelist: pages SQLite no longer uses, which still hold the rows of deleted sessions (this
// build does not overwrite freed pages). Recovery must never read rows from them, so it walks the
// trunk chain from the header; when that chain is broken, or the header itself is unreadable, it
// says so, and recognises trunk pages by their shape instead.
import type { PageImage } from "./page-image.js";

export type FreelistStatus = "ok" | "damaged" | "scanned";

export interface Freelist {
  status: FreelistStatus;
  /** Trunk and leaf pages known to be free. */
  pages: Set<number>;
  detail: string | null;
}

interface Trunk {
  next: number;
  leaves: number[];
}

/** Read a page as a freelist trunk, or null when its numbers cannot be one. */
function readTrunk(image: PageImage, pgno: number): Trunk | null {
  const page = image.page(pgno);
  if (page === null) return null;
  const next = page.readUInt32BE(0);
  const count = page.readUInt32BE(4);
  if (next > image.pageCount || count > image.usable / 4 - 2) return null;
  const leaves: number[] = [];
  for (let i = 0; i < count; i++) {
    const leaf = page.readUInt32BE(8 + 4 * i);
    if (leaf < 2 || leaf > image.pageCount) return null;
    leaves.push(leaf);
  }
  return { next, leaves };
}

export function readFreelist(image: PageImage): Freelist {
  if (!image.header.valid) return scanForTrunks(image);
  const pages = new Set<number>();
  let at = image.header.freelistTrunk;
  let trunks = 0;
  while (at !== 0) {
    if (at < 2 || at > image.pageCount || pages.has(at)) {
      return damaged(pages, `the freelist points at page ${at}, which cannot be a trunk page`);
    }
    const trunk = readTrunk(image, at);
    if (trunk === null) return damaged(pages, `freelist trunk page ${at} is damaged`);
    pages.add(at);
    trunks++;
    for (const leaf of trunk.leaves) pages.add(leaf);
    if (trunks > image.lastPresent) return damaged(pages, "the freelist trunk chain loops");
    at = trunk.next;
  }
  if (pages.size !== image.header.freelistCount) {
    return damaged(
      pages,
      `the freelist holds ${pages.size} pages but the header counts ${image.header.freelistCount}`,
    );
  }
  return { status: "ok", pages, detail: null };
}

function damaged(pages: Set<number>, detail: string): Freelist {
  return { status: "damaged", pages, detail };
}

/**
 * With page 1 unreadable there is no chain to follow: take every page shaped like a trunk whose
 * leaves are distinct pages. A b-tree page never qualifies (its first byte makes the "next trunk"
 * number larger than any file of fewer than 2^24 pages), and neither does text.
 */
function scanForTrunks(image: PageImage): Freelist {
  const pages = new Set<number>();
  for (let p = 2; p <= image.lastPresent; p++) {
    const trunk = readTrunk(image, p);
    if (trunk === null || trunk.next === p || new Set(trunk.leaves).size !== trunk.leaves.length) continue;
    if (trunk.leaves.includes(p)) continue;
    const page = image.page(p);
    // A zeroed page passes every test above; it is unused space, not a trunk.
    if (page === null || (trunk.next === 0 && trunk.leaves.length === 0)) continue;
    pages.add(p);
    for (const leaf of trunk.leaves) pages.add(leaf);
  }
  return {
    status: "scanned",
    pages,
    detail: "page 1 is unreadable, so the freelist was found by scanning for pages shaped like its trunks",
  };
}
