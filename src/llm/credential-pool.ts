// One provider's API keys, tried in config order: a key that hit a rate limit cools down until its
// reset, a key the provider refused is disabled until it changes, a key out of credit rests for
// hours. The state lives in a ledger (state.db when given one) so every process of the profile
// skips the same keys; it names keys by fingerprint only. A provider configured without api_keys
// (a server that needs none) is a pool of one pseudo-key that cools down like any key but is never
// disabled: a refusal is a key missing from the config, and every call tries the server again.
import { ConfigError } from "../core/errors.js";
import {
  type CredentialState,
  type CredentialStateStore,
  type CredentialStatus,
  type CredentialUpdate,
  isUsable,
  MemoryCredentialLedger,
} from "../store/credential-ledger.js";
import type { ClassifiedError } from "./classified-error.js";
import { keyFingerprint } from "./key-fingerprint.js";

export interface PoolTimings {
  /** A rate limit without the provider's own delay. */
  rate_limit_cooldown_ms: number;
  /** Rate-limit cooldowns when no other key is usable: short, so one key is never locked out long. */
  last_key_rate_limit_cap_ms: number;
  /** Billing or quota exhausted: credit rarely comes back within minutes. */
  billing_cooldown_ms: number;
  /** Billing cooldowns when no other key is usable: retry soon, in case credit was added. */
  last_key_billing_cap_ms: number;
  /** Any other failure the classifier blamed on the key. */
  other_rotate_cooldown_ms: number;
}

/**
 * The ledger's name for a key's state with one model of a provider: a rate limit whose error named
 * the model (`model_named`) cools the key for that model only, the provider's other models keep it.
 */
export function modelScope(provider: string, model: string): string {
  return `${provider}#${model}`;
}

/** The key a provider without api_keys is called with: local servers ignore it, the SDKs need one. */
export const NO_KEY = "no-key";

export const DEFAULT_POOL_TIMINGS: PoolTimings = {
  rate_limit_cooldown_ms: 60_000,
  last_key_rate_limit_cap_ms: 30_000,
  billing_cooldown_ms: 6 * 60 * 60_000,
  last_key_billing_cap_ms: 5 * 60_000,
  other_rotate_cooldown_ms: 60_000,
};

export interface PoolKey {
  key: string;
  fingerprint: string;
}

/** A key picked for one call, with what the pool knew of it then (see `reportSuccess`). */
export interface PickedKey extends PoolKey {
  /** The ledger had nothing to clear for it when it was picked: no row, or ok with no failures. */
  readonly clean: boolean;
  /** How many verdicts this pool had started to record for it by then. */
  readonly recorded: number;
}

/**
 * What report() did: the caller rotates (calls next() again) after `cooled` or `disabled`, and
 * retries the same key after `retry_same_key`. `key_required`: a keyless provider was refused, so
 * there is nothing to rotate or disable; the configuration lacks a key.
 */
export type PoolVerdict = "retry_same_key" | "cooled" | "disabled" | "unchanged" | "key_required";

/** One key as `tenax status` shows it: never the key itself. */
export interface PoolKeyState {
  position: number;
  fingerprint: string;
  status: CredentialStatus;
  reason: string | null;
  cooldown_until: number | null;
  failures: number;
}

export interface CredentialPoolOptions {
  /** Where the state is kept and shared; an in-memory ledger when left out. */
  ledger?: CredentialStateStore;
  timings?: Partial<PoolTimings>;
}

export class CredentialPool {
  private readonly keys: PoolKey[];
  private readonly ledger: CredentialStateStore;
  private readonly timings: PoolTimings;
  /** Keys that got their one same-key retry after a 429 without a delay; a success clears it. */
  private readonly retriedOnce = new Set<string>();
  /** Verdicts this pool started to record, per key: a pick whose count still matches saw them all. */
  private readonly recorded = new Map<string, number>();

  /** False for a provider configured without api_keys: its server needs no key. */
  readonly keyed: boolean;

  /** `keys` null: the provider has no api_keys (a server that needs none). */
  constructor(
    readonly provider: string,
    keys: readonly string[] | null,
    options: CredentialPoolOptions = {},
  ) {
    const seen = new Set<string>();
    this.keyed = keys !== null;
    this.keys = [];
    for (const key of keys ?? [NO_KEY]) {
      if (key.length === 0) throw new ConfigError(`provider '${provider}' has an empty API key`);
      const fingerprint = keyFingerprint(key);
      if (seen.has(fingerprint)) continue;
      seen.add(fingerprint);
      this.keys.push({ key, fingerprint });
    }
    if (this.keys.length === 0) {
      throw new ConfigError(`provider '${provider}' has no API keys`, {
        hint: "list at least one key under the provider's api_keys in config.yaml",
      });
    }
    this.ledger = options.ledger ?? new MemoryCredentialLedger();
    this.timings = { ...DEFAULT_POOL_TIMINGS, ...options.timings };
  }

  get size(): number {
    return this.keys.length;
  }

  /** The first usable key in config order, or null when every key is cooling or disabled. */
  async next(now: number): Promise<PoolKey | null> {
    const picked = await this.pick(now);
    return picked === null ? null : (this.keys.find((k) => k.fingerprint === picked.fingerprint) ?? null);
  }

  /**
   * The same key as `next`, with what the ledger said of it, for `reportSuccess` after the call.
   * With `model`, a key cooling for that model alone (a rate limit that named it) is skipped too.
   */
  async pick(now: number, model?: string): Promise<PickedKey | null> {
    const known = new Map((await this.ledger.get(this.provider)).map((s) => [s.fingerprint, s]));
    const scoped = await this.scoped(model);
    const key = this.keys.find(
      (k) =>
        isUsable(this.effective(known.get(k.fingerprint)), now) && isUsable(scoped.get(k.fingerprint), now),
    );
    if (key === undefined) return null;
    // Spelt out: a spread here cost about a microsecond a call on Node 20.
    return {
      key: key.key,
      fingerprint: key.fingerprint,
      clean: isClean(known.get(key.fingerprint)) && isClean(scoped.get(key.fingerprint)),
      recorded: this.recorded.get(key.fingerprint) ?? 0,
    };
  }

  /** The keys' states with one model (none without a model). */
  private async scoped(model: string | undefined): Promise<Map<string, CredentialState>> {
    if (model === undefined) return new Map();
    return new Map((await this.ledger.get(modelScope(this.provider, model))).map((s) => [s.fingerprint, s]));
  }

  /**
   * Apply a failed call's classification to the key that made it. A rate limit whose error named
   * the call's `model` cools the key for that model only.
   */
  async report(
    fingerprint: string,
    classified: ClassifiedError,
    now: number,
    model?: string,
  ): Promise<PoolVerdict> {
    this.known(fingerprint);
    const t = this.timings;
    switch (classified.reason) {
      case "rate_limit": {
        if (classified.retry_after_ms === null && !this.retriedOnce.has(fingerprint)) {
          this.retriedOnce.add(fingerprint);
          return "retry_same_key";
        }
        const scope = classified.model_named === true && model !== undefined ? model : undefined;
        const wanted = classified.retry_after_ms ?? t.rate_limit_cooldown_ms;
        const cap = (await this.isLastUsable(fingerprint, now, scope))
          ? t.last_key_rate_limit_cap_ms
          : wanted;
        await this.cool(fingerprint, "rate_limit", Math.min(wanted, cap), now, scope);
        return "cooled";
      }
      case "billing": {
        const last = await this.isLastUsable(fingerprint, now);
        await this.cool(
          fingerprint,
          "billing",
          last ? t.last_key_billing_cap_ms : t.billing_cooldown_ms,
          now,
        );
        return "cooled";
      }
      case "auth":
      case "auth_permanent":
        if (!this.keyed) return "key_required";
        // Keyed by fingerprint: a replaced key is a new fingerprint and starts fresh.
        await this.record(fingerprint, {
          status: "disabled",
          reason: classified.reason,
          failures: "increment",
          now,
        });
        return "disabled";
      default:
        if (!classified.rotate_credential) return "unchanged";
        await this.cool(fingerprint, classified.reason, t.other_rotate_cooldown_ms, now);
        return "cooled";
    }
  }

  /**
   * The key worked: it is usable again everywhere, and earns back its same-key retry. `sentAt` is
   * when the successful request went out: a verdict another process recorded after that moment
   * is newer than this success and is kept.
   *
   * Given the pick the call was made with, a key that was clean then, with no verdict recorded by
   * this pool since, costs no read at all: any verdict in the ledger now was recorded by another
   * writer after the pick read the row, so during the call, and is newer news that stands (the
   * pick's read and `sentAt` are microseconds apart, with no I/O between, well inside the
   * ledger's millisecond clock). Anything else is read and cleared as before.
   */
  async reportSuccess(key: string | PickedKey, now: number, sentAt = now, model?: string): Promise<void> {
    const fingerprint = typeof key === "string" ? key : key.fingerprint;
    this.known(fingerprint);
    this.retriedOnce.delete(fingerprint);
    if (typeof key !== "string" && key.clean && key.recorded === (this.recorded.get(fingerprint) ?? 0))
      return;
    const clear = { status: "ok" as const, failures: "reset" as const, now, unless_changed_after: sentAt };
    const state = (await this.ledger.get(this.provider)).find((s) => s.fingerprint === fingerprint);
    // Write only when there is something to clear, so a healthy key costs no write.
    if (!isClean(state)) await this.record(fingerprint, clear);
    const withModel = (await this.scoped(model)).get(fingerprint);
    if (model !== undefined && !isClean(withModel)) await this.record(fingerprint, clear, model);
  }

  /**
   * Every key in config order with its status at `now` (a cooldown that ended reads as ok); with
   * `model`, a key cooling for that model alone reads as cooling (the later cooldown of the two).
   */
  async state(now: number, model?: string): Promise<PoolKeyState[]> {
    const known = new Map((await this.ledger.get(this.provider)).map((s) => [s.fingerprint, s]));
    const scoped = await this.scoped(model);
    return this.keys.map(({ fingerprint }, position) => {
      const s = stricter(this.effective(known.get(fingerprint)), scoped.get(fingerprint), now);
      if (!s || (s.status === "cooling" && isUsable(s, now))) {
        return {
          position,
          fingerprint,
          status: "ok",
          reason: null,
          cooldown_until: null,
          failures: s?.failures ?? 0,
        };
      }
      return {
        position,
        fingerprint,
        status: s.status,
        reason: s.reason,
        cooldown_until: s.cooldown_until,
        failures: s.failures,
      };
    });
  }

  /**
   * A key's state as the pool judges it. A keyless pool's pseudo-key is never disabled: a row that
   * says so (an older Tenax disabled it after a 401) reads as none, and the next success clears it.
   */
  private effective(state: CredentialState | undefined): CredentialState | undefined {
    return this.keyed || state?.status !== "disabled" ? state : undefined;
  }

  private fingerprints(): string[] {
    return this.keys.map((k) => k.fingerprint);
  }

  private known(fingerprint: string): void {
    if (!this.keys.some((k) => k.fingerprint === fingerprint)) {
      throw new RangeError(`fingerprint ${fingerprint} is not a key of provider '${this.provider}'`);
    }
  }

  /** No other key of the pool is usable now (for `model`, when given): this one is all that is left. */
  private async isLastUsable(fingerprint: string, now: number, model?: string): Promise<boolean> {
    const others = this.fingerprints().filter((f) => f !== fingerprint);
    const usable = await this.ledger.usable(this.provider, others, now);
    if (model === undefined) return usable.length === 0;
    return (await this.ledger.usable(modelScope(this.provider, model), usable, now)).length === 0;
  }

  /** Every write of the pool goes here, counted before it starts, so no pick misses one in flight. */
  private async record(fingerprint: string, update: CredentialUpdate, model?: string): Promise<void> {
    this.recorded.set(fingerprint, (this.recorded.get(fingerprint) ?? 0) + 1);
    await this.ledger.record(
      model === undefined ? this.provider : modelScope(this.provider, model),
      fingerprint,
      update,
    );
  }

  private async cool(
    fingerprint: string,
    reason: string,
    ms: number,
    now: number,
    model?: string,
  ): Promise<void> {
    await this.record(
      fingerprint,
      {
        status: "cooling",
        reason,
        cooldown_until: now + Math.max(0, ms),
        failures: "increment",
        now,
      },
      model,
    );
  }
}

/** Of a key's state and its state with one model, the one that keeps it out longer at `now`. */
function stricter(
  key: CredentialState | undefined,
  model: CredentialState | undefined,
  now: number,
): CredentialState | undefined {
  if (model === undefined || isUsable(model, now)) return key;
  if (key === undefined || isUsable(key, now)) return model;
  if (key.status === "disabled") return key;
  return (model.cooldown_until ?? 0) > (key.cooldown_until ?? 0) ? model : key;
}

/** Nothing for a success to clear: no row yet, or a row that says ok with no failures. */
function isClean(state: CredentialState | undefined): boolean {
  return state === undefined || (state.status === "ok" && state.failures === 0);
}
