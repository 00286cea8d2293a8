// How the gateway's and the dashboard's HTTP servers treat connections (`gateway.connections`,
// `dashboard.connections`): one section, the same defaults for both, turned into the limits the
// HTTP layer's connection guard takes (src/http/connection-guard.ts says what each one does).
import { z } from "zod";
import { type ConnectionLimits, DEFAULT_CONNECTION_LIMITS } from "../http/connection-guard.js";

const seconds = (fallbackMs: number, max: number) => {
  const error = `expected a number of seconds (more than 0, at most ${max})`;
  return z
    .number({ error })
    .positive({ error })
    .max(max, { error })
    .default(fallbackMs / 1000);
};

export const connectionsSchema = z
  .strictObject({
    /** A connection must send a complete request head this soon after arriving (or after keep_alive_timeout). */
    headers_timeout: seconds(DEFAULT_CONNECTION_LIMITS.headers_timeout_ms, 600),
    /** Receiving one whole request, body included; an answer (a long stream) is never cut by it. */
    request_timeout: seconds(DEFAULT_CONNECTION_LIMITS.request_timeout_ms, 3600),
    /** How long a connection may sit idle after an answer, waiting for the client's next request. */
    keep_alive_timeout: seconds(DEFAULT_CONNECTION_LIMITS.keep_alive_timeout_ms, 600),
    /** Connections held at once; past it the longest-idle one is closed to make room. */
    max_connections: z
      .number({ error: "expected a whole number of connections (10 or more)" })
      .int({ error: "expected a whole number of connections (10 or more)" })
      .min(10, { error: "expected a whole number of connections (10 or more)" })
      .default(DEFAULT_CONNECTION_LIMITS.max_connections),
  })
  .refine((c) => c.headers_timeout <= c.request_timeout, {
    error: "headers_timeout must not be longer than request_timeout (the head is part of the request)",
    path: ["headers_timeout"],
  });

export type ConnectionSettings = z.infer<typeof connectionsSchema>;

export function connectionLimits(settings: ConnectionSettings): ConnectionLimits {
  const ms = (s: number) => Math.max(1, Math.round(s * 1000));
  return {
    headers_timeout_ms: ms(settings.headers_timeout),
    request_timeout_ms: ms(settings.request_timeout),
    keep_alive_timeout_ms: ms(settings.keep_alive_timeout),
    max_connections: settings.max_connections,
  };
}
