import { describe, expect, it } from "vitest";
import { splitMessage, TELEGRAM_TEXT_LIMIT } from "./split.js";

describe("splitMessage", () => {
  it("leaves a message that fits alone, and never returns nothing", () => {
    expect(splitMessage("hello")).toEqual(["hello"]);
    expect(splitMessage("")).toEqual([""]);
    expect(splitMessage("x".repeat(TELEGRAM_TEXT_LIMIT))).toHaveLength(1);
  });

  it("cuts at paragraph breaks, every part within the limit, nothing lost", () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `paragraph ${i} ${"word ".repeat(60)}`.trim());
    const text = paragraphs.join("\n\n");
    const parts = splitMessage(text, 1000);
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(1000);
    // Each part ends a paragraph: no paragraph is cut in two.
    for (const p of parts) expect(paragraphs).toContain(p.split("\n\n").at(-1));
    expect(parts.join("\n\n")).toBe(text);
  });

  it("falls back to spaces and then to a hard cut that never splits a surrogate pair", () => {
    const words = splitMessage("abc ".repeat(100).trim(), 100);
    for (const p of words) expect(p).toMatch(/^(abc ?)+$/);
    expect(words.join(" ")).toBe("abc ".repeat(100).trim());
    const emoji = "😀".repeat(100); // 200 UTF-16 units, no space
    const parts = splitMessage(emoji, 101);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(101);
      expect(p).toMatch(/^(😀)+$/u);
    }
    expect(parts.join("")).toBe(emoji);
  });

  it("a code block cut in two is closed and reopened with its language", () => {
    const code = Array.from({ length: 80 }, (_, i) => `console.log(${i});`).join("\n");
    const text = `Here it is:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nDone.`;
    const parts = splitMessage(text, 500);
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(500);
      // Fences pair up inside every part.
      expect((p.match(/^\s*```/gm) ?? []).length % 2).toBe(0);
    }
    expect(parts[1]?.startsWith("```ts\n")).toBe(true);
    expect(parts.at(-1)).toContain("Done.");
    const lines = parts
      .join("\n")
      .split("\n")
      .filter((l) => l.startsWith("console.log"));
    expect(lines).toHaveLength(80);
  });
});
