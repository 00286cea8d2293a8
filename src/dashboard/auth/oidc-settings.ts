// The dashboard's OIDC settings, checked once when the login is made (a bad one is a TenaxError
// then, never a refusal at each login), and the rule by which `allowed` lets a user in.
//
// `allowed` holds subjects and emails: an entry lets a user in when it equals their `sub` exactly,
// or their email (in any case) when the provider marks it verified. An unverified email does not
// count: at a provider that lets a user set any address (self sign-up, an editable profile) it would
// let anyone claim a listed one. Users of a provider that sends no `email_verified` are listed by
// subject; the refusal names the subject to add.
import { type ClientAuth, ClientSecretBasic, ClientSecretPost, None } from "openid-client";
import { TenaxError } from "../../core/errors.js";
import type { OidcUser } from "./oidc-outcomes.js";

export interface OidcSettings {
  /** The provider's issuer identifier: https://, or http:// on a loopback address. */
  issuer: string;
  client_id: string;
  /** Absent for a public client (PKCE alone). */
  client_secret?: string;
  /** Who may log in: subjects (`sub`, exactly) and emails (any case, verified by the provider). */
  allowed: string[];
  /** The bound on each request to the provider, discovery included. */
  timeout_ms: number;
}

/** The settings checked: the issuer as a URL, and `allowed` made ready to match. */
export interface CheckedSettings {
  issuer: URL;
  /** An http:// issuer (on loopback): openid-client allows only https unless told. */
  insecure: boolean;
  allowlist: Allowlist;
}

export function checkSettings(settings: OidcSettings): CheckedSettings {
  const issuer = issuerUrl(settings.issuer);
  if (settings.allowed.length === 0) {
    throw new TenaxError("oidc_allowed_empty", "the dashboard's OIDC login allows no one: allowed is empty", {
      hint: "list in allowed the subjects or emails of the users who may log in",
    });
  }
  if (!Number.isFinite(settings.timeout_ms) || settings.timeout_ms <= 0) {
    throw new TenaxError(
      "oidc_timeout_invalid",
      `the OIDC timeout_ms must be above 0, not ${settings.timeout_ms}`,
      {
        hint: "set timeout_ms to a number of milliseconds, such as 10000",
      },
    );
  }
  return { issuer, insecure: issuer.protocol === "http:", allowlist: new Allowlist(settings.allowed) };
}

export class Allowlist {
  private readonly subjects: ReadonlySet<string>;
  private readonly emails: ReadonlySet<string>;

  constructor(allowed: readonly string[]) {
    this.subjects = new Set(allowed);
    this.emails = new Set(allowed.filter((a) => a.includes("@")).map((a) => a.toLowerCase()));
  }

  allows(user: OidcUser): boolean {
    return this.subjects.has(user.subject) || (user.email_verified && this.listsEmail(user));
  }

  /** Whether the user's email is listed, verified or not (for the words of a refusal). */
  listsEmail(user: OidcUser): boolean {
    return user.email !== null && this.emails.has(user.email.toLowerCase());
  }
}

/** The issuer as a URL: https, or http on a loopback address (a provider on this host). */
function issuerUrl(issuer: string): URL {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new TenaxError("oidc_issuer_invalid", `the OIDC issuer ${JSON.stringify(issuer)} is not a URL`, {
      hint: "set issuer to the provider's issuer identifier, such as https://accounts.example.com",
    });
  }
  if (url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))) return url;
  throw new TenaxError(
    "oidc_issuer_insecure",
    `the OIDC issuer ${issuer} is not https: Tenax sends login codes and client secrets to an OIDC provider over https only (http only on a loopback address)`,
    { hint: "set issuer to the provider's https:// address" },
  );
}

function isLoopback(hostname: string): boolean {
  return (
    hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

/**
 * The client secret goes in an Authorization header (client_secret_basic, OAuth's default) unless
 * the provider lists only client_secret_post; a client without a secret is a public one (PKCE alone).
 */
export function clientAuth(secret: string | undefined): ClientAuth {
  if (secret === undefined) return None();
  const basic = ClientSecretBasic(secret);
  const post = ClientSecretPost(secret);
  return (as, client, body, headers) => {
    const methods = as.token_endpoint_auth_methods_supported;
    const useBasic = methods === undefined || methods.includes("client_secret_basic");
    (useBasic ? basic : post)(as, client, body, headers);
  };
}
