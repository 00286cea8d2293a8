// A profile's config as it is now, for a process that runs on while config.yaml is edited (the
// dashboard, which must keep serving to show a config error): loaded again whenever config.yaml
// or .env has changed since the last look. While it does not load, the last config that did (else
// the defaults) stays in force, and `problem` is the error that says why.

import { TenaxError } from "../core/errors.js";
import { fileSignature } from "../profile/file-signature.js";
import type { ProfilePaths } from "../profile/paths.js";
import { type LoadedConfig, loadConfig } from "./load.js";
import { defaultConfig, type TenaxConfig } from "./schema.js";

export class LiveConfig {
  private seen: string | null = null;
  private config: TenaxConfig = defaultConfig();
  private loaded: LoadedConfig | null = null;
  private error: TenaxError | null = null;

  constructor(
    private readonly paths: ProfilePaths,
    private readonly load: (paths: ProfilePaths) => LoadedConfig = loadConfig,
  ) {}

  /** The config in force now (loaded again first when its files changed). */
  current(): TenaxConfig {
    this.refresh();
    return this.config;
  }

  /** What the last successful load said (its warnings, where the key came from); null before one. */
  get lastLoaded(): LoadedConfig | null {
    this.refresh();
    return this.loaded;
  }

  /** Why config.yaml (or .env) does not load as it is now; null when it does. */
  get problem(): TenaxError | null {
    this.refresh();
    return this.error;
  }

  private refresh(): void {
    const now = `${fileSignature(this.paths.config)}|${fileSignature(this.paths.env)}`;
    if (now === this.seen) return;
    this.seen = now;
    try {
      this.loaded = this.load(this.paths);
      this.config = this.loaded.config;
      this.error = null;
    } catch (error) {
      // Only a config that does not load is kept as a problem; anything else is a bug to report.
      if (!TenaxError.isInstance(error)) throw error;
      this.error = error;
    }
  }
}
