import { describe, expect, it } from "vitest";
import type { ToolSpec } from "./provider.js";
import { estimateTokens } from "./tokens.js";

const tool: ToolSpec = {
  name: "read_file",
  description: "Read a file of the workspace.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

describe("estimateTokens", () => {
  it("counts about four characters a token, plus a little per message", () => {
    expect(estimateTokens([{ role: "user", content: "x".repeat(40) }])).toBe(10 + 4);
  });

  it("counts a tool by its JSON, the same on every call of a turn", () => {
    const messages = [{ role: "user" as const, content: "" }];
    const expected = Math.ceil(JSON.stringify(tool).length / 4) + 4;
    expect(estimateTokens(messages, [tool])).toBe(expected);
    expect(estimateTokens(messages, [tool])).toBe(expected);
    expect(estimateTokens(messages, [tool, { ...tool }])).toBe(
      Math.ceil((2 * JSON.stringify(tool).length) / 4) + 4,
    );
  });
});
