// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
// The telemetry section of config.yaml: checked like every other (a bad URL or an unknown key stops
// the load with the key), its header values read from the environment and treated as secrets.
import { describe, expect, it } from "vitest";
import { profileWith, thrown } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";
import { configSecrets, redactConfig } from "./secrets.js";

describe("telemetry in config.yaml", () => {
  it("takes an endpoint, headers from the environment, a service name; the header values are secrets", () => {
    const paths = profileWith(
      'telemetry:\n  endpoint: http://127.0.0.1:4318\n  headers: { authorization: "Bearer ${OTEL_TOKEN}" }\n  service_name: tenax-prod\n',
    );
    const { config } = loadConfig(paths, { OTEL_TOKEN: "tok-123456789" });
    expect(config.telemetry).toEqual({
      endpoint: "http://127.0.0.1:4318",
      headers: { authorization: "Bearer tok-123456789" },
      service_name: "tenax-prod",
    });
    expect(configSecrets(config)).toContainEqual(
      expect.objectContaining({ name: "telemetry.headers.authorization", value: "Bearer tok-123456789" }),
    );
    expect(JSON.stringify(redactConfig(config))).not.toContain("tok-123456789");
  });

  it("is absent by default", () => {
    expect(loadConfig(profileWith("retry: { max_attempts: 2 }\n"), {}).config.telemetry).toBeUndefined();
  });

  it("refuses an endpoint that is not an http(s) URL, a misspelt key and a bad header name, naming each", () => {
    const error = thrown(() =>
      loadConfig(
        profileWith(
          'telemetry:\n  endpoint: "127.0.0.1:4318"\n  servce_name: x\n  headers: { "bad header": v }\n',
        ),
        {},
      ),
    );
    expect(error.message).toMatch(/telemetry\.endpoint.*expected an http:\/\/ or https:\/\/ URL/s);
    expect(error.message).toMatch(/telemetry\.servce_name: unknown key \(did you mean "service_name"\?\)/);
    expect(error.message).toMatch(
      /telemetry\.headers\["bad header"\]: expected a mapping of HTTP header names/,
    );
  });
});
