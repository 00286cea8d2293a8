// Choosing a profile's gateway and dashboard ports: the default profile has 8642/8080; each other
// profile takes the lowest pair 8642+k/8080+k that no profile configures and nothing listens on.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { parseDocument } from "yaml";
import { ConfigError } from "../core/errors.js";

export const DEFAULT_GATEWAY_PORT = 8642;
export const DEFAULT_DASHBOARD_PORT = 8080;
const MAX_OFFSET = 1000;

export interface PortPair {
  gateway: number;
  dashboard: number;
}

/** Whether a port can be bound on 127.0.0.1 right now. */
export type PortProbe = (port: number) => Promise<boolean>;

export const probeLoopbackPort: PortProbe = (port) =>
  new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });

/**
 * The ports a config.yaml asks for, read leniently: a missing file or key means the default port,
 * a broken file or a value that is not a number (e.g. still a `${VAR}`) gives null.
 */
export function configuredPorts(configFile: string): { gateway: number | null; dashboard: number | null } {
  let data: unknown;
  try {
    const doc = parseDocument(readFileSync(configFile, "utf8"), { prettyErrors: false });
    if (doc.errors.length > 0) return { gateway: null, dashboard: null };
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      return { gateway: DEFAULT_GATEWAY_PORT, dashboard: DEFAULT_DASHBOARD_PORT };
    }
    return { gateway: null, dashboard: null };
  }
  return {
    gateway: portIn(data, "gateway", DEFAULT_GATEWAY_PORT),
    dashboard: portIn(data, "dashboard", DEFAULT_DASHBOARD_PORT),
  };
}

function portIn(data: unknown, section: string, fallback: number): number | null {
  if (data === null || data === undefined) return fallback;
  if (typeof data !== "object") return null;
  const value = (data as Record<string, unknown>)[section];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "object") return null;
  const port = (value as Record<string, unknown>).port;
  if (port === undefined) return fallback;
  return typeof port === "number" && Number.isInteger(port) ? port : null;
}

/** The lowest free pair above the defaults, avoiding `taken` ports and ports something listens on. */
export async function allocatePorts(
  taken: ReadonlySet<number>,
  probe: PortProbe = probeLoopbackPort,
): Promise<PortPair> {
  for (let k = 1; k <= MAX_OFFSET; k++) {
    const pair = { gateway: DEFAULT_GATEWAY_PORT + k, dashboard: DEFAULT_DASHBOARD_PORT + k };
    if (taken.has(pair.gateway) || taken.has(pair.dashboard)) continue;
    if (!(await probe(pair.gateway))) continue;
    if (!(await probe(pair.dashboard))) continue;
    return pair;
  }
  throw new ConfigError(
    `no free port pair between ${DEFAULT_GATEWAY_PORT + 1}/${DEFAULT_DASHBOARD_PORT + 1} and ${DEFAULT_GATEWAY_PORT + MAX_OFFSET}/${DEFAULT_DASHBOARD_PORT + MAX_OFFSET}`,
    { hint: "delete profiles you no longer use (see: tenax profile list), or free some of those ports" },
  );
}
