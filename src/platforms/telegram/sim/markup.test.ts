// The parse_mode checker on its own: what it refuses with Telegram's reason, and the text and
// entities it gives for what parses.
import { describe, expect, it } from "vitest";
import { parseMarkup } from "./markup.js";

describe("parseMarkup", () => {
  it("reads MarkdownV2: escapes, nesting, code, links and quotes", () => {
    expect(parseMarkup("*bold _both_* \\. `a.b` [x](https://e.x/\\))", "MarkdownV2")).toEqual({
      ok: true,
      text: "bold both . a.b x",
      entities: [
        { type: "bold", offset: 0, length: 9 },
        { type: "italic", offset: 5, length: 4 },
        { type: "code", offset: 12, length: 3 },
        { type: "text_link", offset: 16, length: 1, url: "https://e.x/)" },
      ],
    });
    expect(parseMarkup(">quoted\nplain", "MarkdownV2")).toMatchObject({ ok: true, text: "quoted\nplain" });
    expect(parseMarkup("```ts\nconst a = 1;\n```", "MarkdownV2")).toMatchObject({
      ok: true,
      entities: [{ type: "pre", language: "ts" }],
    });
  });

  it("refuses MarkdownV2 with a reserved character or an open entity, with byte offsets", () => {
    expect(parseMarkup("Hi!", "MarkdownV2")).toEqual({
      ok: false,
      reason: "Character '!' is reserved and must be escaped with the preceding '\\'",
    });
    expect(parseMarkup("ä ~strike", "MarkdownV2")).toEqual({
      ok: false,
      reason: "Can't find end of Strikethrough entity at byte offset 3",
    });
    expect(parseMarkup("`code", "MarkdownV2")).toMatchObject({
      ok: false,
      reason: /Code entity at byte offset 0/,
    });
  });

  it("reads and refuses legacy Markdown", () => {
    expect(parseMarkup("*a* and 1.5!", "Markdown")).toMatchObject({ ok: true, text: "a and 1.5!" });
    expect(parseMarkup("x _open", "Markdown")).toEqual({
      ok: false,
      reason: "Can't find end of the entity starting at byte offset 2",
    });
  });

  it("reads HTML and refuses unknown, unclosed and crossed tags", () => {
    expect(parseMarkup('<b>a</b> &lt;3 <a href="https://e.x">l</a>', "HTML")).toEqual({
      ok: true,
      text: "a <3 l",
      entities: [
        { type: "bold", offset: 0, length: 1 },
        { type: "text_link", offset: 5, length: 1, url: "https://e.x" },
      ],
    });
    expect(parseMarkup("<b><i>x</b></i>", "HTML")).toEqual({
      ok: false,
      reason: 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"',
    });
    expect(parseMarkup("<div>x</div>", "HTML")).toMatchObject({
      ok: false,
      reason: /Unsupported start tag "div"/,
    });
    expect(parseMarkup("x</b>", "HTML")).toMatchObject({
      ok: false,
      reason: /Unexpected end tag at byte offset 1/,
    });
  });

  it("leaves text alone with no parse_mode", () => {
    expect(parseMarkup("*not bold*.", undefined)).toEqual({ ok: true, text: "*not bold*.", entities: [] });
  });
});
