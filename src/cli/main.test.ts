import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { TenaxError } from "../core/errors.js";
import { type Cli, type Register, registerCommands } from "./main.js";

const cli = {} as Cli;

describe("registerCommands", () => {
  it("registers each command it is given", async () => {
    const program = new Command("tenax");
    const add =
      (name: string): Register =>
      async (p) => {
        p.command(name);
      };
    await registerCommands([add("status"), add("cron")], program, cli, "");
    expect(program.commands.map((c) => c.name())).toEqual(["status", "cron"]);
  });

  it("a command whose code cannot load is an error naming it and the fix, not a crash", async () => {
    // As a native module built for another Node.js, or a file missing from dist, would fail.
    const broken: Register = () => import("./commands/no-such-command.js" as string);
    const failure = await registerCommands([broken], new Command("tenax"), cli, "status").catch(
      (e: unknown) => e,
    );
    expect(TenaxError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ code: "code_load_failed", exitCode: 1 });
    expect((failure as Error).message).toMatch(/^could not load the code of tenax status: .*no-such-command/);
    expect((failure as TenaxError).hint).toContain("npm install");
  });
});
