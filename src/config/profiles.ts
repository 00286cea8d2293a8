// Profiles on disk: create one (folder, sub-folders and a config.yaml with ports of its own), list
// them, show one, delete one. The default profile is TENAX_HOME itself: it is always listed (its
// config_exists says whether `tenax init` has run) and can never be deleted.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { TenaxError, UsageError } from "../core/errors.js";
import { type WriteFile, writeFileAtomic } from "../profile/atomic-write.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { fileWriteError, nearestExisting } from "../profile/fs-errors.js";
import { readGatewayPid } from "../profile/gateway-pid.js";
import { DEFAULT_PROFILE, PROFILE_FOLDERS, profilePaths, validateProfileName } from "../profile/paths.js";
import {
  allocatePorts,
  configuredPorts,
  DEFAULT_DASHBOARD_PORT,
  DEFAULT_GATEWAY_PORT,
  type PortProbe,
} from "../profile/ports.js";
import { dashboardAddress, gatewayAddress } from "../profile/serving.js";
import { loadConfig } from "./load.js";
import { type TenaxConfig, usesBuiltInSimulator } from "./schema.js";
import { redactConfig } from "./secrets.js";
import { renderConfigTemplate } from "./template.js";

/** One profile as `profile list` shows it (snake_case: this is also the JSON shape). */
export interface ProfileInfo {
  name: string;
  is_default: boolean;
  dir: string;
  config_file: string;
  config_exists: boolean;
  /**
   * Where each serves while it runs (its pid file, or the profile's tenax up, which keeps the ports
   * it was given as flags), else config.yaml's, read leniently; null when that cannot be read as
   * a number.
   */
  gateway_port: number | null;
  dashboard_port: number | null;
  /** What config.yaml says (read leniently as above), whatever runs. */
  configured_ports: { gateway: number | null; dashboard: number | null };
  gateway_pid: number | null;
  gateway_running: boolean;
}

export interface ProfileDeps {
  probe?: PortProbe;
  writeFile?: WriteFile;
}

/** Every profile: the default one first, then the others by name. */
export function listProfiles(home: string): ProfileInfo[] {
  return profileNames(home).map((name) => profileInfo(home, name));
}

/** The names of the existing profiles, the default one first. */
export function profileNames(home: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(join(home, "profiles"));
  } catch {
    entries = [];
  }
  const named = entries.filter(
    (name) => isValidName(name) && name !== DEFAULT_PROFILE && isDir(join(home, "profiles", name)),
  );
  return [DEFAULT_PROFILE, ...named.sort()];
}

export function profileInfo(home: string, name: string): ProfileInfo {
  const paths = profilePaths(home, name);
  const ports = configuredPorts(paths.config);
  const gateway = readGatewayPid(paths.pid);
  const serving = { gateway: gatewayAddress(paths), dashboard: dashboardAddress(paths) };
  return {
    name,
    is_default: name === DEFAULT_PROFILE,
    dir: paths.dir,
    config_file: paths.config,
    config_exists: existsSync(paths.config),
    gateway_port: serving.gateway?.port ?? ports.gateway,
    dashboard_port: serving.dashboard?.port ?? ports.dashboard,
    configured_ports: ports,
    gateway_pid: gateway.pid,
    gateway_running: gateway.running,
  };
}

/** Throw a usage error naming the existing profiles when `name` is not one of them. */
export function requireProfile(home: string, name: string): void {
  validateProfileName(name);
  if (name === DEFAULT_PROFILE || isDir(profilePaths(home, name).dir)) return;
  throw new UsageError(`no profile named "${name}" (existing profiles: ${profileNames(home).join(", ")})`, {
    hint: `create it with: ${tenaxCommand(DEFAULT_PROFILE, ["profile", "create", name])}\nsee the existing ones with: ${tenaxCommand(DEFAULT_PROFILE, ["profile", "list"])}`,
    data: { profile: name, existing: profileNames(home) },
  });
}

/**
 * Create profile `name`: its folder (mode 0700) with spool/, logs/, cron/ and a commented
 * config.yaml whose ports no other profile uses. It is built in a hidden staging folder and
 * renamed into place, so a failure never leaves a half-made profile behind.
 */
export async function createProfile(
  home: string,
  name: string,
  deps: ProfileDeps = {},
): Promise<ProfileInfo> {
  validateProfileName(name);
  if (name === DEFAULT_PROFILE) {
    throw new UsageError(`"${DEFAULT_PROFILE}" is the profile in TENAX_HOME itself and always exists`, {
      hint: `write its config with: ${tenaxCommand(DEFAULT_PROFILE, ["init"])}`,
    });
  }
  const paths = profilePaths(home, name);
  if (existsSync(paths.dir)) throw profileExists(name, paths.dir);
  const parent = join(home, "profiles");
  const action = `create profile ${name}`;
  try {
    await mkdir(home, { recursive: true, mode: 0o700 });
    await mkdir(parent, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw fileWriteError(error, action, parent, nearestExisting(parent));
  }

  const ports = await allocatePorts(portsInUse(home, name), deps.probe);
  const text = renderConfigTemplate({
    profile: name,
    gatewayPort: ports.gateway,
    dashboardPort: ports.dashboard,
  });
  let staging: string | undefined;
  try {
    staging = await mkdtemp(join(parent, `.${name}.creating-`));
    await chmod(staging, 0o700);
    for (const sub of PROFILE_FOLDERS) await mkdir(join(staging, sub), { mode: 0o700 });
    await (deps.writeFile ?? writeFileAtomic)(join(staging, "config.yaml"), text, 0o600);
    await rename(staging, paths.dir);
  } catch (error) {
    if (staging) await rm(staging, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ENOTEMPTY") throw profileExists(name, paths.dir);
    throw fileWriteError(error, action, paths.dir, parent);
  }
  return profileInfo(home, name);
}

/**
 * Delete profile `name` and everything in its folder. Refused for the default profile, for a
 * profile that does not exist, and while the profile's gateway is running.
 */
export async function deleteProfile(home: string, name: string): Promise<ProfileInfo> {
  validateProfileName(name);
  if (name === DEFAULT_PROFILE) {
    throw new UsageError("the default profile is TENAX_HOME itself and cannot be deleted", {
      hint: "to remove everything Tenax keeps, delete the TENAX_HOME folder by hand",
    });
  }
  requireProfile(home, name);
  const info = profileInfo(home, name);
  if (info.gateway_running) {
    throw new TenaxError(
      "profile_busy",
      `the gateway of profile ${name} is running (pid ${info.gateway_pid})`,
      {
        hint: `stop it first (kill ${info.gateway_pid}), then delete the profile`,
        data: { profile: name, pid: info.gateway_pid },
      },
    );
  }
  // Move it aside first so a delete interrupted half-way never leaves a half-profile listed.
  const doomed = join(home, "profiles", `.${name}.deleting-${randomBytes(4).toString("hex")}`);
  try {
    await rename(info.dir, doomed);
    await rm(doomed, { recursive: true, force: true });
  } catch (error) {
    throw fileWriteError(error, `delete profile ${name}`, info.dir, join(home, "profiles"));
  }
  return info;
}

/** One profile in full: `profileInfo` plus its loaded config (secrets shown as `***`) or the error. */
export interface ProfileDetails extends ProfileInfo {
  env_file: string;
  env_exists: boolean;
  state_file: string;
  state_exists: boolean;
  config_source: "file" | "defaults" | null;
  uses_simulator: boolean | null;
  config: TenaxConfig | null;
  config_error: { message: string; hint: string | null } | null;
  warnings: string[];
}

export function showProfile(
  home: string,
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): ProfileDetails {
  requireProfile(home, name);
  const paths = profilePaths(home, name);
  const base = {
    ...profileInfo(home, name),
    env_file: paths.env,
    env_exists: existsSync(paths.env),
    state_file: paths.state,
    state_exists: existsSync(paths.state),
  };
  try {
    const loaded = loadConfig(paths, env);
    const { gateway, dashboard } = loaded.config;
    const running = { gateway: gatewayAddress(paths), dashboard: dashboardAddress(paths) };
    return {
      ...base,
      gateway_port: running.gateway?.port ?? gateway.port,
      dashboard_port: running.dashboard?.port ?? dashboard.port,
      configured_ports: { gateway: gateway.port, dashboard: dashboard.port },
      config_source: loaded.source,
      uses_simulator: usesBuiltInSimulator(loaded.config),
      config: redactConfig(loaded.config),
      config_error: null,
      warnings: loaded.warnings,
    };
  } catch (error) {
    if (!TenaxError.isInstance(error)) throw error;
    const config_error = { message: error.message, hint: error.hint ?? null };
    return { ...base, config_source: null, uses_simulator: null, config: null, config_error, warnings: [] };
  }
}

/** Ports configured by every profile other than `except`, plus the default pair. */
export function portsInUse(home: string, except: string): Set<number> {
  const taken = new Set([DEFAULT_GATEWAY_PORT, DEFAULT_DASHBOARD_PORT]);
  for (const name of profileNames(home)) {
    if (name === except) continue;
    const ports = configuredPorts(profilePaths(home, name).config);
    if (ports.gateway !== null) taken.add(ports.gateway);
    if (ports.dashboard !== null) taken.add(ports.dashboard);
  }
  return taken;
}

function profileExists(name: string, dir: string): TenaxError {
  return new TenaxError("profile_exists", `profile ${name} already exists at ${dir}`, {
    hint: `see it with: ${tenaxCommand(DEFAULT_PROFILE, ["profile", "show", name])}`,
    data: { profile: name, dir },
  });
}

function isValidName(name: string): boolean {
  try {
    validateProfileName(name);
    return true;
  } catch {
    return false;
  }
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
