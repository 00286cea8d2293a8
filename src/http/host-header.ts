// Which names a local server answers to. A page elsewhere can point its own host name at
// 127.0.0.1 (DNS rebinding) and then talk to a loopback server as if it were its own origin; the
// browser still sends the attacker's name in `Host`, so a server that answers only the names it
// is really reached by cannot be used that way. Shared by the gateway and the dashboard.
import { networkInterfaces } from "node:os";

/** A loopback name: localhost, any 127.x.x.x, or ::1 (with or without its brackets). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** True for an address that means "every interface" (0.0.0.0, ::). */
export function isWildcard(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "0.0.0.0" || h === "::" || h === "0:0:0:0:0:0:0:0";
}

/** How long the machine's addresses are taken as read: interfaces change rarely, requests often. */
const INTERFACES_TTL_MS = 5000;
let interfaces: { at: number; addresses: string[] } | null = null;

/** The names a server bound to `host` is reached by: that host, or every address of the machine. */
export function boundNames(host: string, now: number = Date.now()): string[] {
  if (!isWildcard(host)) return [host];
  if (interfaces === null || now - interfaces.at > INTERFACES_TTL_MS)
    interfaces = {
      at: now,
      addresses: Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address)),
    };
  return interfaces.addresses;
}

export interface HostHeader {
  /** Lowercased, without brackets around an IPv6 address. */
  name: string;
  /** null when the header gives none. */
  port: number | null;
}

/** Split a `Host` header into its name and port; null when it is missing or malformed. */
export function parseHostHeader(header: string | undefined): HostHeader | null {
  if (header === undefined) return null;
  const value = header.trim().toLowerCase();
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(value);
  const plain = /^([a-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
  const match = bracketed ?? plain;
  if (!match?.[1]) return null;
  const port = match[2] === undefined ? null : Number(match[2]);
  if (port !== null && port > 65_535) return null;
  return { name: match[1], port };
}

/** Whether a `Host` header names a loopback address (any port): what the dashboard accepts. */
export function loopbackHostHeader(header: string | undefined): boolean {
  const parsed = parseHostHeader(header);
  return parsed !== null && isLoopback(parsed.name);
}

export interface HostPolicy {
  /** The names the server is bound to (its configured host, or the machine's addresses for 0.0.0.0). */
  bound: () => readonly string[];
  /** The port it is bound to, which a bound name must come with; null: not listening yet. */
  port: number | null;
  /** Names the operator allows on any port (the name a reverse proxy passes on). */
  extra: readonly string[];
}

/**
 * Whether a request's `Host` is one the server answers: a loopback name on any port, an extra
 * name on any port, or a bound name with the bound port (no port means 80, as a browser sends it).
 */
export function hostAllowed(header: string | undefined, policy: HostPolicy): boolean {
  const parsed = parseHostHeader(header);
  if (parsed === null) return false;
  if (isLoopback(parsed.name)) return true;
  const same = (names: readonly string[]) =>
    names.some((n) => n.replace(/^\[|\]$/g, "").toLowerCase() === parsed.name);
  if (same(policy.extra)) return true;
  return policy.port !== null && (parsed.port ?? 80) === policy.port && same(policy.bound());
}
