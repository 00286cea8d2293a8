// Why a server could not open its address, classified once from the system's error code: a port in
// use, a port this user may not open, a host that does not resolve, one that is no address of this
// machine. Each names the setting at fault (host or port) and whether trying again could help, so
// the entry point can say where that setting was given (a config key, a flag) and exit accordingly.
import { createServer } from "node:net";
import { TenaxError } from "../core/errors.js";

/** Which of the two values given to listen is wrong. */
export type BindSetting = "host" | "port";

interface BindRule {
  codes: readonly string[];
  /** Code suffix of the TenaxError: `gateway_port_in_use`. */
  kind: "port_in_use" | "port_forbidden" | "host_unresolved" | "host_unreachable_now" | "host_not_local";
  setting: BindSetting;
  /** True when the same value fails the same way every time: only changing it helps. */
  lasting: boolean;
  message(host: string, port: number, code: string): string;
  hint?: string;
}

const HOST_HINT =
  "give an address of this machine: 127.0.0.1 (this machine only), 0.0.0.0 (every interface), or one that `ip -brief address` lists";

/** In order; the first rule whose codes hold the error's code applies. */
const RULES: readonly BindRule[] = [
  {
    codes: ["EADDRINUSE"],
    kind: "port_in_use",
    setting: "port",
    lasting: false,
    message: (host, port) => `port ${port} on ${host} is already in use`,
  },
  {
    codes: ["EACCES", "EPERM"],
    kind: "port_forbidden",
    setting: "port",
    lasting: true,
    message: (host, port, code) =>
      `port ${port} on ${host} may not be opened by this user (${code}; ports below 1024 need privileges)`,
    hint: "choose a port from 1024 to 65535",
  },
  {
    codes: ["ENOTFOUND", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL"],
    kind: "host_unresolved",
    setting: "host",
    lasting: true,
    message: (host, _port, code) => `${JSON.stringify(host)} does not resolve to any address (${code})`,
    hint: HOST_HINT,
  },
  {
    codes: ["EAI_AGAIN"],
    kind: "host_unreachable_now",
    setting: "host",
    lasting: false,
    message: (host, _port, code) =>
      `${JSON.stringify(host)} could not be resolved just now: the name server did not answer (${code})`,
    hint: `try again once name resolution works, or ${HOST_HINT}`,
  },
  {
    codes: ["EADDRNOTAVAIL", "EINVAL", "EAFNOSUPPORT"],
    kind: "host_not_local",
    setting: "host",
    lasting: true,
    message: (host, _port, code) =>
      `${JSON.stringify(host)} is not an address of this machine, so nothing can listen on it (${code})`,
    hint: HOST_HINT,
  },
];

const BIND_BRAND = Symbol.for("tenax.bind-error");

/** A server that could not open host:port, and which of the two is at fault. */
export class BindError extends TenaxError {
  readonly [BIND_BRAND] = true;
  override readonly name = "BindError";

  constructor(
    code: string,
    message: string,
    readonly setting: BindSetting,
    readonly lasting: boolean,
    readonly host: string,
    readonly port: number,
    options: { hint?: string; cause: unknown },
  ) {
    super(code, message, { ...options, data: { setting, host, port, lasting } });
  }

  static isBindError(value: unknown): value is BindError {
    return TenaxError.isInstance(value) && (value as unknown as Record<symbol, unknown>)[BIND_BRAND] === true;
  }
}

export interface BindErrorOptions {
  /** What serves there, for the error code: gateway, dashboard, simulator. */
  name: string;
  /** How to choose another port, for a port in use. */
  portHint?: string;
}

/** The BindError for a listen that failed, or the error as it is when no rule knows its code. */
export function bindError(error: unknown, host: string, port: number, options: BindErrorOptions): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== "string") return error;
  const rule = RULES.find((r) => r.codes.includes(code));
  if (rule === undefined) return error;
  const hint = rule.kind === "port_in_use" ? (options.portHint ?? rule.hint) : rule.hint;
  return new BindError(
    `${options.name}_${rule.kind}`,
    rule.message(host, port, code),
    rule.setting,
    rule.lasting,
    host,
    port,
    { cause: error, ...(hint === undefined ? {} : { hint }) },
  );
}

/**
 * Whether anything can listen on `host` (it resolves, to an address of this machine), tried on a
 * free port and let go at once: an entry point asks before it starts anything, so a host that can
 * never work stops it before it has opened a store or resumed a turn.
 */
export async function checkHost(host: string, options: BindErrorOptions): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(bindError(error, host, 0, options)));
    server.listen(0, host, () => server.close(() => resolve()));
  });
}
