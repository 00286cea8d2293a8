// The turn's guardrails against loops that burn money and time: the same call with the same
// arguments and the same result several times in a row halts the turn (pollers exempt; a changed
// result resets the streak), and a call that keeps failing the same way is blocked from running
// again. The iteration budget is the turn loop's own count.
import { createHash } from "node:crypto";

export interface GuardrailLimits {
  /** Identical call + identical result this many times in a row: halt. */
  identical_call_limit: number;
  /** Identical call failing this many times in a row: block further runs of it. */
  failing_call_limit: number;
}

export type Verdict = { action: "run" } | { action: "block"; message: string };
export type AfterVerdict = { action: "continue" } | { action: "halt"; message: string };

export class Guardrails {
  private lastCall: string | null = null;
  private lastResult: string | null = null;
  private streak = 0;
  /** Consecutive failures per exact call. */
  private readonly failures = new Map<string, number>();

  constructor(private readonly limits: GuardrailLimits) {}

  /** Before a call runs: a call that failed the same way too often is blocked. */
  before(name: string, args: string): Verdict {
    const key = callKey(name, args);
    const failed = this.failures.get(key) ?? 0;
    if (failed >= this.limits.failing_call_limit) {
      return {
        action: "block",
        message: `blocked: ${name} with these exact arguments already failed ${failed} times in a row this turn; change the arguments or try something else`,
      };
    }
    return { action: "run" };
  }

  /** After a call ran: count failures, and halt on a streak of identical calls with identical results. */
  after(
    name: string,
    args: string,
    result: string,
    outcome: { failed: boolean; poller: boolean },
  ): AfterVerdict {
    const key = callKey(name, args);
    if (outcome.failed) this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    else this.failures.delete(key);

    if (outcome.poller) {
      // Polling the same thing until it changes is the point of a poller; it never builds a streak.
      this.lastCall = null;
      this.streak = 0;
      return { action: "continue" };
    }
    const digest = hash(result);
    if (key === this.lastCall && digest === this.lastResult) {
      this.streak++;
    } else {
      this.lastCall = key;
      this.lastResult = digest;
      this.streak = 1;
    }
    if (this.streak >= this.limits.identical_call_limit) {
      return {
        action: "halt",
        message: `stopped: ${name} was called ${this.streak} times in a row with the same arguments and got the same result each time; the turn is halted so it does not loop`,
      };
    }
    return { action: "continue" };
  }
}

/** Arguments compared by meaning, not by spacing or key order. */
function callKey(name: string, args: string): string {
  let canonical = args.trim();
  try {
    canonical = stableJson(JSON.parse(args));
  } catch {
    // Not JSON: compared as written.
  }
  return `${name}\u0000${hash(canonical)}`;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}
