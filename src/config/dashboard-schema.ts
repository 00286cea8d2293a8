// The `dashboard` section of config.yaml: where the page listens, and who may open it.
// `auth.mode` is `token` by default, on loopback too: anyone who can reach the port would otherwise
// read every transcript (on a shared host, another Unix user). `none` is an explicit choice for a
// single-user machine and is refused anywhere but loopback (cli/commands/dashboard.ts). Behind a
// reverse proxy, `public_url` is the address people open: links are made on it, its name passes
// the Host and Origin checks, and an https one makes the login cookies `Secure`.
import { z } from "zod";
import { connectionsSchema } from "./connections-schema.js";
import { host, httpUrl, port, text } from "./schema-parts.js";

const seconds = (max: number) => {
  const error = `expected a number of seconds (more than 0, at most ${max})`;
  return z.number({ error }).positive({ error }).max(max, { error });
};

const DAY = 24 * 3600;

const oidc = z.strictObject({
  /** The provider's issuer URL (its discovery document is ISSUER/.well-known/openid-configuration). */
  issuer: httpUrl,
  client_id: text("the client id registered with the provider"),
  /** A secret: write it as ${VAR} with the value in .env. Left out for a public client (PKCE only). */
  client_secret: text("the client secret (write it as a variable from .env)").optional(),
  /** Who may log in: email addresses or subjects (the ID token's `sub`). */
  allowed: z
    .array(text("an email address or a subject"), { error: "expected a list of emails or subjects" })
    .min(1, { error: "expected at least one email or subject: with none, nobody could log in" }),
  /** Seconds any one request to the provider may take (discovery, code exchange, refresh). */
  timeout: seconds(120).default(10),
});

const auth = z
  .strictObject({
    mode: z.enum(["token", "oidc", "none"], { error: 'expected "token", "oidc" or "none"' }).default("token"),
    /** Seconds an access session lasts before the refresh token renews it. */
    access_ttl: seconds(DAY).default(900),
    /** Seconds a login lasts without a refresh (each refresh starts it again). */
    refresh_ttl: seconds(365 * DAY).default(30 * DAY),
    /** Seconds a rotated refresh token still gets the same successor (a device's tabs waking together). */
    grace: seconds(10).default(5),
    oidc: oidc.optional(),
  })
  .refine((a) => a.access_ttl < a.refresh_ttl, {
    error:
      "expected access_ttl to be shorter than refresh_ttl (seconds): an access session is renewed by the refresh token",
    path: ["access_ttl"],
  })
  .refine((a) => a.mode !== "oidc" || a.oidc !== undefined, {
    error: "mode oidc needs dashboard.auth.oidc: { issuer, client_id, client_secret, allowed }",
    path: ["oidc"],
  });

export const dashboardSchema = z.strictObject({
  host: host().default("127.0.0.1"),
  port: port().default(8080),
  /** The address people open when a reverse proxy (with TLS) stands in front: https://agent.example.com */
  public_url: httpUrl.optional(),
  connections: connectionsSchema.prefault({}),
  auth: auth.prefault({}),
});

export type DashboardConfig = z.infer<typeof dashboardSchema>;
export type DashboardAuthConfig = DashboardConfig["auth"];
