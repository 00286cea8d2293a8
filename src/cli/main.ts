// The `tenax` command line: global options, the command tree, and one place that turns errors
// into messages and exit codes (0 ok, 1 failed, 2 usage).
import { Command, CommanderError } from "commander";
import { ensureProfileHome } from "../config/profile-home.js";
import { requireProfile } from "../config/profiles.js";
import { type ProfilePaths, profilePaths, resolveHome, selectProfileName } from "../profile/paths.js";
import { registerApprovalsCommands } from "./commands/approvals.js";
import { registerChatCommand } from "./commands/chat.js";
import { registerCheckpointsCommands } from "./commands/checkpoints.js";
import { registerCronCommands } from "./commands/cron.js";
import { registerDashboardCommand } from "./commands/dashboard.js";
import { registerDoctorCommand } from "./commands/doctor.js";
import { registerDrillCommand } from "./commands/drill.js";
import { registerEventsCommand } from "./commands/events.js";
import { registerGatewayCommands } from "./commands/gateway.js";
import { registerGatewayServiceCommands } from "./commands/gateway-service.js";
import { registerInitCommand } from "./commands/init.js";
import { registerProfileCommands } from "./commands/profile.js";
import { registerSessionsCommands } from "./commands/sessions.js";
import { registerSimulatorCommand } from "./commands/simulator.js";
import { registerStatusCommand } from "./commands/status.js";
import { registerStoreCommands } from "./commands/store.js";
import { registerUpCommand } from "./commands/up.js";
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

export const VERSION = "0.1.0";

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

  registerApprovalsCommands(program, cli);
  registerCheckpointsCommands(program, cli);
  registerCronCommands(program, cli);
  registerDashboardCommand(program, cli);
  registerDoctorCommand(program, cli);
  registerDrillCommand(program, cli);
  registerEventsCommand(program, cli);
  registerGatewayServiceCommands(registerGatewayCommands(program, cli), cli);
  registerInitCommand(program, cli);
  registerChatCommand(program, cli);
  registerProfileCommands(program, cli);
  registerSessionsCommands(program, cli);
  registerSimulatorCommand(program, cli);
  registerStatusCommand(program, cli);
  registerStoreCommands(program, cli);
  registerUpCommand(program, cli);
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

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}
