// Typed errors shared by every layer: a stable name and code, a hint that tells the operator what to
// do (often a command that works exactly as printed), JSON output, and an instance check that works
// across copies of the module.

const BRAND = Symbol.for("tenax.error");

export interface TenaxErrorOptions {
  /** What the operator should do next; printed after the message. */
  hint?: string;
  cause?: unknown;
  /** Extra typed data for JSON output and for callers. */
  data?: Record<string, unknown>;
  /** CLI exit code when this error ends a command (1 failed, 2 usage). */
  exitCode?: 1 | 2;
}

export class TenaxError extends Error {
  readonly [BRAND] = true;
  override readonly name: string = "TenaxError";
  readonly code: string;
  readonly hint: string | undefined;
  readonly data: Record<string, unknown>;
  readonly exitCode: 1 | 2;

  constructor(code: string, message: string, options: TenaxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
    this.data = options.data ?? {};
    this.exitCode = options.exitCode ?? 1;
  }

  static isInstance(value: unknown): value is TenaxError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.hint ? { hint: this.hint } : {}),
      ...(Object.keys(this.data).length > 0 ? { data: this.data } : {}),
    };
  }
}

/** Bad input from the user: a malformed config, an unknown profile, a wrong flag. */
export class UsageError extends TenaxError {
  override readonly name = "UsageError";
  constructor(message: string, options: TenaxErrorOptions = {}) {
    super("usage", message, { exitCode: 2, ...options });
  }
}

const CONFIG_INVALID = "config_invalid";

export class ConfigError extends TenaxError {
  override readonly name = "ConfigError";
  constructor(message: string, options: TenaxErrorOptions = {}) {
    super(CONFIG_INVALID, message, { exitCode: 1, ...options });
  }
}

/** A ConfigError, also one made by another copy of this module. */
export function isConfigError(value: unknown): value is ConfigError {
  return TenaxError.isInstance(value) && value.code === CONFIG_INVALID;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** Quote one argument for a POSIX shell so a printed command works exactly as printed. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_\-./=:@%+,]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** A command line the user can paste: each argument quoted where it needs to be. */
export function commandLine(args: readonly string[]): string {
  return args.map(shellQuote).join(" ");
}
