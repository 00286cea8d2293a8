import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext } from "../../../test/helpers/tool-context.js";
import { defineTool } from "./define-tool.js";
import { ToolError } from "./types.js";

const echo = defineTool({
  name: "echo_back",
  description: "Returns its arguments.",
  schema: z.strictObject({
    text: z.string().describe("What to say."),
    times: z.number().int().min(1).optional(),
  }),
  readOnly: true,
  run: async (args) => args,
});

describe("defineTool", () => {
  it("gives the model a JSON Schema that refuses unknown keys", () => {
    expect(echo.spec.name).toBe("echo_back");
    expect(echo.spec.parameters).toMatchObject({
      type: "object",
      properties: { text: { type: "string", description: "What to say." }, times: { type: "integer" } },
      required: ["text"],
      additionalProperties: false,
    });
    expect(echo.spec.parameters).not.toHaveProperty("$schema");
    expect(echo.readOnly).toBe(true);
    expect(echo.poller).toBeUndefined();
  });

  it("passes checked arguments to run", async () => {
    await expect(echo.run({ text: "hi", times: 2 }, toolContext(tempDir()))).resolves.toEqual({
      text: "hi",
      times: 2,
    });
  });

  it("names the tool, each bad argument, what was expected and what came", async () => {
    const error = await echo
      .run({ times: 0.5, extra: true }, toolContext(tempDir()))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    const message = (error as ToolError).message;
    expect(message).toMatch(/^echo_back: bad arguments: /);
    expect(message).toContain('argument "text": is required (expected string)');
    expect(message).toContain('argument "times": ');
    expect(message).toContain("(got 0.5)");
    expect(message).toContain('Unrecognized key: "extra"');
    expect((error as ToolError).details.problems).toHaveLength(3);
  });

  it("refuses arguments that are not an object", async () => {
    await expect(
      echo.run(null as unknown as Record<string, unknown>, toolContext(tempDir())),
    ).rejects.toThrow(/echo_back: bad arguments: .*expected object/);
  });
});
