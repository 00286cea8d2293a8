// The server-sent events parser under the OpenAI-compatible provider, fed the way a socket feeds
// it: in pieces cut anywhere, even inside a line or a UTF-8 character.
import { describe, expect, it } from "vitest";
import { type SseEvent, SseParser } from "./openai-wire.js";

function parse(pieces: Buffer[]): SseEvent[] {
  const parser = new SseParser();
  return [...pieces.flatMap((p) => parser.push(p)), ...parser.end()];
}

/** The text cut into pieces of `size` bytes (so a cut may fall inside a character). */
function cut(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

const STREAM = [
  ": a comment, skipped",
  'data: {"text":"héllo wörld ✓"}',
  "",
  "event: error",
  "data: first line",
  "data:second line",
  "id: 7",
  "retry: 100",
  "",
  "data",
  "",
  "data: [DONE]",
  "",
].join("\n");

const EXPECTED: SseEvent[] = [
  { event: null, data: '{"text":"héllo wörld ✓"}' },
  { event: "error", data: "first line\nsecond line" },
  { event: null, data: "" },
  { event: null, data: "[DONE]" },
];

describe("SseParser", () => {
  it("reads events, multi-line data, the event field and comments as one piece", () => {
    expect(parse([Buffer.from(STREAM)])).toEqual(EXPECTED);
  });

  it("gives the same events however the body is cut, inside lines and characters too", () => {
    for (const size of [1, 2, 3, 5, 7, 13]) expect(parse(cut(STREAM, size))).toEqual(EXPECTED);
  });

  it("takes CRLF line ends as LF", () => {
    expect(parse(cut(STREAM.replaceAll("\n", "\r\n"), 4))).toEqual(EXPECTED);
  });

  it("ends an event the body did not close with a blank line", () => {
    expect(parse([Buffer.from('data: {"a":1}\ndata: {"b":2}')])).toEqual([
      { event: null, data: '{"a":1}\n{"b":2}' },
    ]);
  });

  it("yields an event as soon as its blank line arrives, not at the end", () => {
    const parser = new SseParser();
    expect(parser.push(Buffer.from("data: one\n"))).toEqual([]);
    expect(parser.push(Buffer.from("\ndata: tw"))).toEqual([{ event: null, data: "one" }]);
    expect(parser.end()).toEqual([{ event: null, data: "tw" }]);
  });
});
