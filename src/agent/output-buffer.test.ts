import { describe, expect, it } from "vitest";
import { OutputBuffer } from "./output-buffer.js";

const text = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((from + i) % 26))).join("");

describe("OutputBuffer", () => {
  it("returns everything when it fits", () => {
    const buffer = new OutputBuffer(8, 32);
    buffer.write(Buffer.from("hello "));
    buffer.write(Buffer.from("world"));
    expect(buffer.excerpt()).toEqual({ text: "hello world", omitted_bytes: 0 });
    expect(buffer.total).toBe(11);
  });

  it("keeps the head and the tail of long output and says how much was cut between them", () => {
    const buffer = new OutputBuffer(10, 10);
    const all = text(100);
    // Written in uneven chunks, so the ring wraps mid-chunk.
    for (let at = 0; at < all.length; at += 7) buffer.write(Buffer.from(all.slice(at, at + 7)));
    const excerpt = buffer.excerpt(0, 1_000);
    expect(excerpt.omitted_bytes).toBe(80);
    expect(excerpt.text).toBe(`${all.slice(0, 10)}\n[... 80 bytes omitted ...]\n${all.slice(90)}`);
  });

  it("cuts to maxBytes even when the buffer holds it all", () => {
    const buffer = new OutputBuffer(64, 64);
    const all = text(40);
    buffer.write(Buffer.from(all));
    const excerpt = buffer.excerpt(0, 10);
    expect(excerpt.omitted_bytes).toBe(30);
    expect(excerpt.text).toBe(`${all.slice(0, 5)}\n[... 30 bytes omitted ...]\n${all.slice(35)}`);
  });

  it("gives what is new since a position, and counts output that already left the ring as cut", () => {
    const buffer = new OutputBuffer(4, 16);
    buffer.write(Buffer.from(text(10)));
    expect(buffer.excerpt(6).text).toBe(text(4, 6));
    buffer.write(Buffer.from(text(30, 10)));
    // Bytes 10..23 fell out of the ring (it holds 24..39) and the head holds only 0..3.
    const since = buffer.excerpt(10, 100);
    expect(since.omitted_bytes).toBe(14);
    expect(since.text).toBe(`[... 14 bytes omitted ...]\n${text(16, 24)}`);
    expect(buffer.excerpt(40)).toEqual({ text: "", omitted_bytes: 0 });
  });

  it("keeps only the last bytes of a chunk larger than the ring", () => {
    const buffer = new OutputBuffer(0, 8);
    buffer.write(Buffer.from(text(50)));
    expect(buffer.excerpt(42).text).toBe(text(8, 42));
    expect(buffer.total).toBe(50);
  });
});
