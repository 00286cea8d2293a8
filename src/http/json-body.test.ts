import { describe, expect, it } from "vitest";
import { HttpError } from "./http-error.js";
import { requireJson } from "./json-body.js";

function refusal(header: string | undefined): HttpError | null {
  try {
    requireJson(header);
    return null;
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
}

describe("requireJson", () => {
  it("takes application/json with at most a UTF-8 charset", () => {
    for (const ok of [
      "application/json",
      "Application/JSON",
      "application/json; charset=utf-8",
      'application/json;charset="UTF-8"',
      "application/json; charset=utf8;",
    ])
      expect(refusal(ok), ok).toBeNull();
  });

  it("refuses what a web page can send without asking, and anything else, with 415", () => {
    for (const bad of [
      undefined,
      "",
      "text/plain",
      "text/plain; charset=utf-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json-patch+json",
      "application/json; charset=latin1",
      "application/json; boundary=x",
      "application/jsonx",
    ]) {
      const error = refusal(bad);
      expect(error?.status, String(bad)).toBe(415);
      expect(error?.code).toBe("unsupported_media_type");
      expect(error?.message).toMatch(/Content-Type: application\/json/);
    }
    expect(refusal("application/json; charset=latin1")?.message).toMatch(/charset is "latin1"/);
    expect(refusal(undefined)?.message).toMatch(/has no Content-Type/);
  });
});
