// Sealing a provider's refresh token for the store: it opens under the same server secret only,
// and a changed byte is refused rather than decrypted into something else.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openToken, sealToken } from "./login-tokens.js";

describe("sealed provider tokens", () => {
  const secret = randomBytes(32).toString("base64url");
  const token = "provider-refresh-token-0123456789";

  it("open under the secret they were sealed with, and show nothing of the token", () => {
    const sealed = sealToken(secret, token);
    expect(sealed).not.toContain(token);
    expect(sealToken(secret, token)).not.toBe(sealed);
    expect(openToken(secret, sealed)).toBe(token);
  });

  it("do not open under another secret, changed, or cut", () => {
    const sealed = sealToken(secret, token);
    expect(openToken(randomBytes(32).toString("base64url"), sealed)).toBeNull();
    const [iv, tag, body] = sealed.split(".") as [string, string, string];
    const flipped = Buffer.from(body, "base64url");
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(openToken(secret, [iv, tag, flipped.toString("base64url")].join("."))).toBeNull();
    expect(openToken(secret, `${iv}.${tag}`)).toBeNull();
  });
});
