// A command's output in bounded memory: the first bytes it wrote and a ring of the latest ones, by
// absolute position, so a caller can take "everything since byte N" and learn how much was cut.

export interface Excerpt {
  text: string;
  /** Bytes between the two kept parts that were cut (or had already left the buffer). */
  omitted_bytes: number;
}

export class OutputBuffer {
  private readonly head: Buffer;
  private readonly ring: Buffer;
  private written = 0;

  constructor(headBytes: number, tailBytes: number) {
    this.head = Buffer.alloc(headBytes);
    this.ring = Buffer.alloc(Math.max(1, tailBytes));
  }

  /** Bytes written so far: the position the next byte will have. */
  get total(): number {
    return this.written;
  }

  write(chunk: Buffer): void {
    if (this.written < this.head.length) chunk.copy(this.head, this.written, 0);
    const cap = this.ring.length;
    // Only the last `cap` bytes of a chunk can survive in the ring.
    const skip = Math.max(0, chunk.length - cap);
    let position = this.written + skip;
    let from = skip;
    while (from < chunk.length) {
      const at = position % cap;
      const copied = chunk.copy(this.ring, at, from, Math.min(chunk.length, from + cap - at));
      from += copied;
      position += copied;
    }
    this.written += chunk.length;
  }

  /** Where the kept bytes are: [0, headEnd) and [tailStart, total). */
  private ranges(): { headEnd: number; tailStart: number } {
    return {
      headEnd: Math.min(this.written, this.head.length),
      tailStart: Math.max(0, this.written - this.ring.length),
    };
  }

  /** The bytes [from, to), which must all be kept: from the head, then from the ring. */
  private bytes(from: number, to: number): Buffer {
    if (to <= from) return Buffer.alloc(0);
    const { headEnd } = this.ranges();
    const fromHead = from < headEnd ? this.head.subarray(from, Math.min(to, headEnd)) : Buffer.alloc(0);
    const start = from + fromHead.length;
    if (start >= to) return fromHead;
    const cap = this.ring.length;
    const rest = Buffer.alloc(to - start);
    let done = 0;
    while (done < rest.length) {
      const at = (start + done) % cap;
      done += this.ring.copy(rest, done, at, Math.min(cap, at + rest.length - done));
    }
    return fromHead.length > 0 ? Buffer.concat([fromHead, rest]) : rest;
  }

  /**
   * The output from position `from` on, at most `maxBytes` of it: all of it when it fits, else its
   * beginning and its end with a line saying how many bytes between them were cut. Output that
   * already left the buffer counts as cut.
   */
  excerpt(from = 0, maxBytes = Number.POSITIVE_INFINITY): Excerpt {
    const total = this.written;
    const start = Math.min(Math.max(0, from), total);
    const wanted = total - start;
    if (wanted === 0) return { text: "", omitted_bytes: 0 };
    const { headEnd, tailStart } = this.ranges();
    const contiguousTo =
      headEnd >= tailStart ? total : start < headEnd ? headEnd : start >= tailStart ? total : start;
    if (contiguousTo === total && wanted <= maxBytes) {
      return { text: this.bytes(start, total).toString("utf8"), omitted_bytes: 0 };
    }
    const firstEnd = Math.min(contiguousTo, start + Math.floor(maxBytes / 2));
    const first = this.bytes(start, firstEnd);
    const lastStart = Math.max(tailStart, firstEnd, total - (maxBytes - first.length));
    const last = this.bytes(lastStart, total);
    const omitted = wanted - first.length - last.length;
    if (omitted === 0) return { text: Buffer.concat([first, last]).toString("utf8"), omitted_bytes: 0 };
    const marker = `${first.length > 0 ? "\n" : ""}[... ${omitted} bytes omitted ...]\n`;
    return { text: `${first.toString("utf8")}${marker}${last.toString("utf8")}`, omitted_bytes: omitted };
  }
}
