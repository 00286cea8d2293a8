// The gateway's section of config.yaml: where it listens, its key (or auth: none), the web origins
// and host names it answers, its limits. The checks of a key and an origin are exported for the
// places that meet them outside config.yaml (the environment, .env).
import { z } from "zod";
import { connectionsSchema } from "./connections-schema.js";
import { flag, host, port } from "./schema-parts.js";

/**
 * Why a key could not work, or null. Clients send it as `Authorization: Bearer KEY`, and an HTTP
 * header trims spaces around a value and takes only visible text, so a blank or padded key, or one
 * with control characters, could never be sent right.
 */
export function apiKeyProblem(key: string): string | null {
  if (key.trim() === "")
    return "the API key is empty or only whitespace; set a real key, or leave it out to have the gateway's first start write one";
  if (key !== key.trim() || !/^[\x20-\x7e]+$/.test(key))
    return "the API key must be visible ASCII characters with no space at either end (it is sent in an HTTP header)";
  return null;
}

const apiKey = () =>
  z.string({ error: "expected an API key (a string)" }).superRefine((key, ctx) => {
    const problem = apiKeyProblem(key);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  });

/** A web origin as browsers send it in `Origin`: scheme://host[:port], lowercase, no path. */
const webOrigin = () =>
  z.string({ error: "expected a web origin such as https://app.example.com" }).superRefine((value, ctx) => {
    const problem = originProblem(value);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  });

export function originProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${JSON.stringify(value)} is not a web origin: write scheme://host[:port], such as https://app.example.com`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return `${JSON.stringify(value)} is not an http:// or https:// origin`;
  if (url.origin !== value)
    return `${JSON.stringify(value)} is not an origin as a browser sends it (scheme://host[:port], lowercase, no path, no default port): write ${JSON.stringify(url.origin)}`;
  return null;
}

const hostName = () =>
  z
    .string({ error: "expected a host name" })
    .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$/, {
      error: "expected a host name or address without a port or scheme (such as gateway.example.lan)",
    });

export const gatewaySchema = z
  .strictObject({
    host: host().default("127.0.0.1"),
    port: port().default(8642),
    /** Left out, ${TENAX_API_KEY} (environment, then .env); with neither, the first start writes one. */
    api_key: apiKey().optional(),
    /** `none`: no key at all, allowed on a loopback host only. */
    auth: z.enum(["key", "none"], { error: "expected key or none" }).default("key"),
    /** Web origins whose pages may call the gateway (CORS); any other Origin is refused. */
    cors_origins: z.array(webOrigin(), { error: "expected a list of web origins" }).default([]),
    /** Host names the gateway also answers to, on any port (the name a reverse proxy passes on). */
    allowed_hosts: z.array(hostName(), { error: "expected a list of host names" }).default([]),
    /**
     * Where a chat whose `model` is no id of this gateway goes (tenax, or PROVIDER/NAME); left
     * out, an unknown id is a 404 that lists the valid ones.
     */
    default_model: z
      .string({ error: "expected a model id: tenax, or PROVIDER/NAME of a configured model" })
      .min(1, { error: "expected a model id: tenax, or PROVIDER/NAME of a configured model" })
      .optional(),
    /**
     * Where a `model: "tenax"` client's system messages go: after the agent's own system prompt
     * (append), or in its place (replace).
     */
    client_system: z.enum(["append", "replace"], { error: "expected append or replace" }).default("append"),
    drain_timeout: z
      .number({ error: "expected a number of seconds (0 or more)" })
      .min(0, { error: "expected a number of seconds (0 or more)" })
      .default(30),
    /** Agent turns the gateway runs at once, over all sessions; a request beyond it gets a 429. */
    max_turns: z
      .number({ error: "expected a whole number of turns (1 or more)" })
      .int({ error: "expected a whole number of turns (1 or more)" })
      .min(1, { error: "expected a whole number of turns (1 or more)" })
      .default(16),
    /**
     * Turns that may wait for a session whose turn is running (each starts when the one before it
     * ends, in order); past it a request gets a 429. 0: nothing waits.
     */
    session_queue: z
      .number({ error: "expected a whole number of waiting turns (0 or more)" })
      .int({ error: "expected a whole number of waiting turns (0 or more)" })
      .min(0, { error: "expected a whole number of waiting turns (0 or more)" })
      .default(8),
    /**
     * How long a message waits for its session's turn running elsewhere (another gateway, one being
     * taken over from a gateway that died, a `tenax chat`) before a 409 session_busy.
     */
    session_wait: z
      .number({ error: "expected seconds to wait for another gateway's turn (0 or more)" })
      .min(0, { error: "expected seconds to wait for another gateway's turn (0 or more)" })
      .default(60),
    /** On start after a crash, resume the turns it interrupted (src/agent/resume.ts). */
    auto_resume: flag().default(true),
    /** How long the runs API keeps an ended run and its events (GET /v1/runs/ID, Last-Event-ID). */
    run_retention_hours: z
      .number({ error: "expected a number of hours (more than 0)" })
      .positive({ error: "expected a number of hours (more than 0)" })
      .default(24),
    /** What one streaming client may hold unsent before it is dropped (it resumes with Last-Event-ID). */
    stream_buffer_kb: z
      .number({ error: "expected a whole number of KiB (64 or more)" })
      .int({ error: "expected a whole number of KiB (64 or more)" })
      .min(64, { error: "expected a whole number of KiB (64 or more)" })
      .default(1024),
    /** Timeouts and the cap on connections: what keeps a flood of idle sockets from taking it down. */
    connections: connectionsSchema.prefault({}),
  })
  .refine((g) => g.auth !== "none" || g.api_key === undefined, {
    error: "auth: none turns the API key off, so api_key would never be checked; remove one of the two",
    path: ["api_key"],
  });
