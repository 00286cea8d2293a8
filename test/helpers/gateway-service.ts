// `tenax gateway ...` run in-process on a small program built like the real one, against a fake
// systemctl on PATH (a real child process) and a real HTTP server standing in for /health/live.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError } from "commander";
import { vi } from "vitest";
import { registerGatewayServiceCommands } from "../../src/cli/commands/gateway-service.js";
import type { Cli } from "../../src/cli/main.js";
import { createOutput, reportError } from "../../src/cli/output.js";
import { profilePaths, selectProfileName } from "../../src/profile/paths.js";
import type { Run } from "./cli.js";
import {
  type FakeHealth,
  type FakeSystemd,
  fakeEnvironment,
  fakeHealthServer,
  fakeSystemd,
} from "./fake-systemd.js";
import { tempDir } from "./tmp.js";

const servers: FakeHealth[] = [];

/** Close the health servers the setups so far started; for afterEach. */
export async function closeServers(): Promise<void> {
  for (const server of servers.splice(0)) await server.close();
}

export interface Setup {
  home: string;
  configHome: string;
  fake: FakeSystemd;
  env: NodeJS.ProcessEnv;
  health: FakeHealth;
  unitFile: (name?: string) => string;
  run: (args: string[], env?: NodeJS.ProcessEnv) => Promise<Run>;
}

export async function setup(options: { healthy?: boolean; drain?: number } = {}): Promise<Setup> {
  const home = tempDir("tenax-home-");
  const configHome = tempDir("tenax-xdg-");
  const fake = fakeSystemd();
  const env = fakeEnvironment(fake, configHome);
  const health = await fakeHealthServer(options.healthy ?? true);
  servers.push(health);
  const config = `gateway: { host: 127.0.0.1, port: ${health.port}, drain_timeout: ${options.drain ?? 30} }\n`;
  writeFileSync(join(home, "config.yaml"), config);
  mkdirSync(join(home, "profiles", "work"), { recursive: true });
  writeFileSync(join(home, "profiles", "work", "config.yaml"), config);
  return {
    home,
    configHome,
    fake,
    env,
    health,
    unitFile: (name = "tenax-gateway.service") => join(configHome, "systemd", "user", name),
    run: (args, runEnv = env) => runGatewayCommand(home, runEnv, args),
  };
}

/** One `tenax [--profile P] gateway ...` invocation, in-process, its output captured. */
async function runGatewayCommand(home: string, env: NodeJS.ProcessEnv, args: string[]): Promise<Run> {
  let exitCode = 0;
  const program = new Command("tenax").option("--profile <name>").exitOverride();
  const cli: Cli = {
    profile: () => profilePaths(home, selectProfileName(program.opts<{ profile?: string }>().profile, {})),
    async run(json, body) {
      try {
        exitCode = (await body(createOutput(json === true))) ?? 0;
      } catch (error) {
        exitCode = reportError(error, json === true);
      }
    },
  };
  const gateway = program.command("gateway");
  registerGatewayServiceCommands(gateway, cli, { env });
  for (const command of [program, gateway, ...gateway.commands]) command.exitOverride();
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    exitCode = 2;
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return { status: exitCode, stdout, stderr };
}

export const systemctlCalls = (fake: FakeSystemd) =>
  fake
    .calls()
    .filter((c) => c.tool === "systemctl")
    .map((c) => c.args.join(" "));
