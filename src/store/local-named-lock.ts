// A named lock on one host's store (SQLite): the pid file lets one gateway run per profile, so the
// one process that asks holds it, from its first attempt to its release.
import type { NamedLock, NamedLockOptions, NamedLockState } from "./instance-types.js";

export class LocalNamedLock implements NamedLock {
  private current: NamedLockState = "trying";

  constructor(
    readonly name: string,
    private readonly options: NamedLockOptions,
  ) {}

  get state(): NamedLockState {
    return this.current;
  }

  get holder(): string | null {
    return this.current === "held" ? this.options.self : null;
  }

  get detail(): string | null {
    return null;
  }

  async start(): Promise<void> {
    if (this.current !== "trying") return;
    this.current = "held";
    this.options.onChange(this);
  }

  async release(): Promise<void> {
    this.current = "released";
  }
}
