// Two folders a dangerous command would remove, and the simulator scripted to ask for both in
// turn ("removed a", then "b stays"): how the chat tests show an approved command runs and a
// denied one does not. They are made in `dir`, which the profile should list in
// tools.files.roots: in the sandbox, a command reaches nothing else of the machine.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Simulator } from "../../src/llm/simulator/server.js";
import { tempDir } from "./tmp.js";

export function scriptApproveThenDeny(
  sim: Simulator,
  dir = tempDir("tenax-victim-"),
): { a: string; b: string } {
  const [a, b] = ["a", "b"].map((sub) => {
    mkdirSync(join(dir, sub));
    writeFileSync(join(dir, sub, "keep.txt"), "x");
    return join(dir, sub);
  }) as [string, string];
  const remove = (path: string) => ({
    type: "tool_calls" as const,
    calls: [{ name: "terminal", arguments: { command: `rm -rf ${path}` } }],
  });
  sim.script([
    remove(a),
    { type: "reply", text: "removed a" },
    remove(b),
    { type: "reply", text: "b stays" },
  ]);
  return { a, b };
}
