// Placeholder until the salvage commands land (helper-2 replaces this file).
import type { Command } from "commander";
import type { Cli } from "../main.js";

export function registerRecoverCommands(_sessions: Command, _cli: Cli): void {}
