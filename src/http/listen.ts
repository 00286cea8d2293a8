// Opening a port, the one place each entry point (gateway, dashboard, simulator) does it: the
// `--port` flag read the same way, the app's server bound to exactly the host given (not every
// address a name resolves to), a failure to bind named for what it is (bind-error.ts: a port in
// use, a host that does not resolve or is not this machine's), and the server closed with every
// connection it still holds (open event streams included).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { UsageError } from "../core/errors.js";
import type { App } from "./app.js";
import { bindError } from "./bind-error.js";

export { isLoopback } from "./host-header.js";

/** A `--port` value: a whole number from 0 (any free port) to 65535. */
export function parsePort(value: string, flag = "--port"): number {
  const port = Number(value);
  if (!/^[0-9]+$/.test(value) || port > 65_535)
    throw new UsageError(`${flag} must be a whole number from 0 to 65535, not "${value}"`);
  return port;
}

export interface ListenOptions {
  /** What serves here, for the error: gateway, dashboard, simulator. */
  name: string;
  /** How to choose another port, for a port in use. */
  hint?: string;
}

/** Bind the app's server to `host`:`port`; resolves with the bound port. */
export async function listen(app: App, host: string, port: number, options: ListenOptions): Promise<number> {
  await app.ready();
  const server = app.server;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off("listening", onListening);
      reject(
        bindError(error, host, port, {
          name: options.name,
          portHint: options.hint ?? "stop what uses it, or choose another port with --port P",
        }),
      );
    };
    const onListening = () => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(port, host);
  });
  return (server.address() as AddressInfo).port;
}

/** Stop taking connections, cut the ones left (streams that would hold it open), close the app. */
export async function closeApp(app: App): Promise<void> {
  const server: Server = app.server;
  server.closeAllConnections();
  if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  await app.close();
}

/** The URL form of a host: brackets around an IPv6 address. */
export function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
