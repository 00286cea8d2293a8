// The `tenax` command line: global options, the command tree, and one place that turns errors
// into messages and exit codes (0 ok, 1 failed, 2 usage).
import { Command, CommanderError } from "commander";
import { ensureProfileHome } from "../config/profile-home.js";
import { requireProfile } from "../config/profiles.js";
import { codeLoadError } from "../core/load-code.js";
import { type ProfilePaths, profilePaths, resolveHome, selectProfileName } from "../profile/paths.js";
import { createOutput, type Output, reportError } from "./output.js";
import { guardStandardStreams, writeStd } from "./std-streams.js";

export interface Cli {
  /**
   * The selected profile's paths (from --profile, TENAX_PROFILE or the default); a named profile
   * that does not exist is a usage error. With `create`, for commands that write into the
   * profile, its folder is made the first time (0700, with spool/, logs/, cron/); without it
   * nothing is created, so a command that only looks never leaves a home behind.
   */
  profile(options?: { create?: boolean }): ProfilePaths;
  /** Run a command body with output and error handling; sets the exit code. */
  run(
    json: boolean | undefined,
    body: (out: Output) => Promise<number | undefined> | number | undefined,
  ): Promise<void>;
}

import { VERSION } from "../core/version.js";

export { VERSION };

export async function main(argv: string[]): Promise<number> {
  guardStandardStreams();
  let exitCode = 0;
  const program = new Command("tenax")
    .description("Tenax: a self-hosted AI agent runtime that says which layer broke.")
    .version(VERSION)
    .option("--profile <name>", "profile to use (default: TENAX_PROFILE or the default profile)")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => writeStd("stdout", s), writeErr: (s) => writeStd("stderr", s) });

  const cli: Cli = {
    profile(options = {}) {
      const flag = program.opts<{ profile?: string }>().profile;
      const home = resolveHome();
      const name = selectProfileName(flag);
      requireProfile(home, name);
      const paths = profilePaths(home, name);
      return options.create === true ? ensureProfileHome(paths) : paths;
    },
    async run(json, body) {
      const out = createOutput(json === true);
      try {
        exitCode = (await body(out)) ?? 0;
      } catch (error) {
        exitCode = reportError(error, json === true);
      }
    },
  };

  const name = commandName(argv);
  const named = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  const versionOnly = name === "" && argv.some((word) => word === "-V" || word === "--version");
  const registers = named !== undefined ? [named] : versionOnly ? [] : Object.values(COMMANDS);
  try {
    await registerCommands(registers, program, cli, name);
  } catch (error) {
    return reportError(error, false);
  }
  for (const command of allCommands(program)) command.exitOverride();

  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return 0;
      if (error.code === "commander.help") return 0;
      return 2;
    }
    return reportError(error, false);
  }
  return exitCode;
}

export type Register = (program: Command, cli: Cli) => Promise<void>;

/**
 * Each top-level command and how to register it. A command's module is loaded only when it is
 * the one asked for (every one for help, or a name Tenax does not know): loading all of them cost
 * each start about a second, most of it the agent and provider stack that few commands use.
 */
const COMMANDS: Readonly<Record<string, Register>> = {
  approvals: async (p, c) => (await import("./commands/approvals.js")).registerApprovalsCommands(p, c),
  chat: async (p, c) => (await import("./commands/chat.js")).registerChatCommand(p, c),
  checkpoints: async (p, c) => (await import("./commands/checkpoints.js")).registerCheckpointsCommands(p, c),
  cron: async (p, c) => (await import("./commands/cron.js")).registerCronCommands(p, c),
  dashboard: async (p, c) => (await import("./commands/dashboard.js")).registerDashboardCommand(p, c),
  doctor: async (p, c) => (await import("./commands/doctor.js")).registerDoctorCommand(p, c),
  drill: async (p, c) => (await import("./commands/drill.js")).registerDrillCommand(p, c),
  events: async (p, c) => (await import("./commands/events.js")).registerEventsCommand(p, c),
  gateway: async (p, c) => {
    const [gateway, service] = await Promise.all([
      import("./commands/gateway.js"),
      import("./commands/gateway-service.js"),
    ]);
    service.registerGatewayServiceCommands(gateway.registerGatewayCommands(p, c), c);
  },
  init: async (p, c) => (await import("./commands/init.js")).registerInitCommand(p, c),
  mcp: async (p, c) => (await import("./commands/mcp.js")).registerMcpCommands(p, c),
  profile: async (p, c) => (await import("./commands/profile.js")).registerProfileCommands(p, c),
  sessions: async (p, c) => (await import("./commands/sessions.js")).registerSessionsCommands(p, c),
  simulator: async (p, c) => (await import("./commands/simulator.js")).registerSimulatorCommand(p, c),
  status: async (p, c) => (await import("./commands/status.js")).registerStatusCommand(p, c),
  store: async (p, c) => (await import("./commands/store.js")).registerStoreCommands(p, c),
  up: async (p, c) => (await import("./commands/up.js")).registerUpCommand(p, c),
};

/**
 * Loads and registers the commands. Code that cannot load (a native module built for another
 * Node.js, a file missing from dist) is an error naming the command and the fix, not a crash.
 */
export async function registerCommands(
  registers: readonly Register[],
  program: Command,
  cli: Cli,
  name: string,
): Promise<void> {
  try {
    for (const register of registers) await register(program, cli);
  } catch (error) {
    throw codeLoadError(Object.hasOwn(COMMANDS, name) ? `tenax ${name}` : "tenax's commands", error);
  }
}

/** The top-level command `argv` names: its first word that is neither an option nor --profile's value. */
function commandName(argv: readonly string[]): string {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (word === "--profile") i++;
    else if (word === "--") return argv[i + 1] ?? "";
    else if (!word.startsWith("-")) return word;
  }
  return "";
}

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}
