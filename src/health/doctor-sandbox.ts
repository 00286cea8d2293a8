// The doctor's look at where the agent's commands run (tools.exec.sandbox): in bubblewrap (which,
// and that it works for this user), or on the machine and why. `auto` without bubblewrap is a
// warning with the install command; `bwrap` without it is a failure, since the gateway and
// `tenax chat` refuse to start so.

import type { SandboxLayout } from "../agent/sandbox/bwrap-layout.js";
import { type BwrapProbe, chooseSandbox, SandboxUnavailableError } from "../agent/sandbox/sandbox.js";
import type { TenaxConfig } from "../config/schema.js";
import type { ProfilePaths } from "../profile/paths.js";
import { type Check, messageOf } from "./doctor-check.js";

export async function sandboxCheck(
  paths: ProfilePaths,
  config: TenaxConfig | null,
  env: NodeJS.ProcessEnv,
  probe?: (layout: SandboxLayout) => Promise<BwrapProbe>,
): Promise<Check> {
  if (config === null)
    return { name: "sandbox", status: "warn", detail: "config.yaml did not load; see the config check" };
  const mode = config.tools.exec.sandbox;
  try {
    const input = { profile: paths, roots: config.tools.files.roots, env, execPath: process.execPath };
    const choice = await (probe === undefined
      ? chooseSandbox(mode, input)
      : chooseSandbox(mode, input, probe));
    if (choice.sandbox !== null || mode === "none")
      return { name: "sandbox", status: "ok", detail: choice.detail };
    return {
      name: "sandbox",
      status: "warn",
      detail: `${choice.detail}: a command reaches every file Tenax's user can, and only the exec policy and redaction stand before the profile's keys`,
      next: "install bubblewrap (Debian: apt-get install bubblewrap), then run tenax doctor again",
    };
  } catch (error) {
    if (!SandboxUnavailableError.isInstance(error)) throw error;
    return {
      name: "sandbox",
      status: "fail",
      detail: `${messageOf(error)}: the gateway and tenax chat refuse to start`,
      next: error.hint ?? "install bubblewrap (Debian: apt-get install bubblewrap)",
    };
  }
}
