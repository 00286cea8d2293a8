// `tenax init`: write the commented config.yaml for a profile. It never overwrites without `force`,
// and with it keeps the old file as config.yaml.bak and the profile's ports where it can.
import { existsSync } from "node:fs";
import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import { TenaxError, UsageError } from "../core/errors.js";
import { writeFileAtomic } from "../profile/atomic-write.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { fileWriteError } from "../profile/fs-errors.js";
import { DEFAULT_PROFILE, type ProfilePaths } from "../profile/paths.js";
import {
  allocatePorts,
  configuredPorts,
  DEFAULT_DASHBOARD_PORT,
  DEFAULT_GATEWAY_PORT,
  type PortPair,
  type PortProbe,
} from "../profile/ports.js";
import { ensureProfileHome } from "./profile-home.js";
import { portsInUse } from "./profiles.js";
import { renderConfigTemplate } from "./template.js";

export interface InitResult {
  profile: string;
  config_file: string;
  /** True when an existing config.yaml was replaced (with `force`). */
  replaced: boolean;
  /** Where the replaced config was saved, if any. */
  backup_file: string | null;
  gateway_port: number;
  dashboard_port: number;
}

export interface InitOptions {
  force?: boolean;
  probe?: PortProbe;
}

export async function initConfig(paths: ProfilePaths, options: InitOptions = {}): Promise<InitResult> {
  const isDefault = paths.name === DEFAULT_PROFILE;
  if (!isDefault && !existsSync(paths.dir)) {
    throw new UsageError(`profile ${paths.name} does not exist`, {
      hint: `create it (this also writes its config.yaml): ${tenaxCommand(DEFAULT_PROFILE, ["profile", "create", paths.name])}`,
    });
  }
  const exists = existsSync(paths.config);
  if (exists && !options.force) {
    throw new TenaxError("config_exists", `${paths.config} already exists`, {
      hint: `to replace it with a fresh commented config (the current one is kept as config.yaml.bak), run: ${tenaxCommand(paths.name, ["init", "--force"])}`,
      data: { file: paths.config },
    });
  }
  const ports = await choosePorts(paths, exists, options.probe);
  const text = renderConfigTemplate({
    profile: paths.name,
    gatewayPort: ports.gateway,
    dashboardPort: ports.dashboard,
  });
  const backup = exists ? join(paths.dir, "config.yaml.bak") : null;
  ensureProfileHome(paths);
  try {
    if (backup) await copyFile(paths.config, backup);
    await writeFileAtomic(paths.config, text, 0o600);
  } catch (error) {
    throw fileWriteError(error, `write ${paths.config}`, paths.config, paths.dir);
  }
  return {
    profile: paths.name,
    config_file: paths.config,
    replaced: exists,
    backup_file: backup,
    gateway_port: ports.gateway,
    dashboard_port: ports.dashboard,
  };
}

/**
 * Keep the ports of the config being replaced unless another profile uses them; otherwise the
 * default pair for the default profile, or a free pair for another one.
 */
async function choosePorts(paths: ProfilePaths, exists: boolean, probe?: PortProbe): Promise<PortPair> {
  const isDefault = paths.name === DEFAULT_PROFILE;
  const taken = isDefault ? new Set<number>() : portsInUse(paths.home, paths.name);
  if (exists) {
    const { gateway, dashboard } = configuredPorts(paths.config);
    if (gateway !== null && dashboard !== null && !taken.has(gateway) && !taken.has(dashboard)) {
      return { gateway, dashboard };
    }
  }
  if (isDefault) return { gateway: DEFAULT_GATEWAY_PORT, dashboard: DEFAULT_DASHBOARD_PORT };
  return allocatePorts(taken, probe);
}
