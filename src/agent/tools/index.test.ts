import { describe, expect, it } from "vitest";
import { ProcessRegistry } from "../processes.js";
import { fileAndProcessTools, toolSet } from "./index.js";

describe("fileAndProcessTools", () => {
  it("builds the contract's file and process tools, with read-only ones marked", () => {
    const tools = toolSet(fileAndProcessTools(new ProcessRegistry()));
    expect([...tools.keys()]).toEqual([
      "read_file",
      "write_file",
      "patch",
      "search_files",
      "terminal",
      "process",
    ]);
    const readOnly = [...tools.values()].filter((tool) => tool.readOnly).map((tool) => tool.spec.name);
    expect(readOnly).toEqual(["read_file", "search_files"]);
    for (const tool of tools.values()) {
      expect(tool.spec.description.length).toBeGreaterThan(20);
      expect(tool.spec.parameters).toMatchObject({ type: "object", additionalProperties: false });
    }
  });

  it("refuses two tools of the same name across families", () => {
    const registry = new ProcessRegistry();
    expect(() => toolSet(fileAndProcessTools(registry), fileAndProcessTools(registry))).toThrow(
      'two tools are named "read_file"',
    );
  });
});
