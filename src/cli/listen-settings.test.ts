// A bind failure as the setting that gave the value: the system's codes the tests cannot cause as
// root (EACCES on a low port, EAI_AGAIN of a name server that does not answer), and a key the file
// does not set.
import { describe, expect, it } from "vitest";
import { profileWith } from "../../test/helpers/temp-home.js";
import { loadConfig } from "../config/load.js";
import { isConfigError, TenaxError } from "../core/errors.js";
import { bindError } from "../http/bind-error.js";
import { explainBindError, type ListenSettings } from "./listen-settings.js";

const errno = (code: string) => Object.assign(new Error(`listen ${code}`), { code });

function settings(config: string, flags: ListenSettings["flags"] = {}): ListenSettings {
  const paths = profileWith(config);
  return { section: "gateway", file: paths.config, loaded: loadConfig(paths, {}), flags };
}

describe("explainBindError", () => {
  it("a port this user may not open is a config error at gateway.port", () => {
    const s = settings("gateway:\n  port: 80\n");
    const error = explainBindError(bindError(errno("EACCES"), "127.0.0.1", 80, { name: "gateway" }), s);
    expect(isConfigError(error)).toBe(true);
    expect((error as Error).message).toBe(
      `config error: ${s.file}:2: gateway.port: port 80 on 127.0.0.1 may not be opened by this user (EACCES; ports below 1024 need privileges)`,
    );
    expect((error as TenaxError).hint).toBe("choose a port from 1024 to 65535 (or pass --port)");
  });

  it("a name server that does not answer is not a config error: trying again may work", () => {
    const s = settings("gateway:\n  host: gateway.lan\n");
    const error = explainBindError(bindError(errno("EAI_AGAIN"), "gateway.lan", 0, { name: "gateway" }), s);
    expect(isConfigError(error)).toBe(false);
    expect(TenaxError.isInstance(error) && error.exitCode).toBe(1);
    expect((error as Error).message).toBe(
      `"gateway.lan" could not be resolved just now: the name server did not answer (EAI_AGAIN) (gateway.host at ${s.file}:2)`,
    );
  });

  it("a default that fails says the file does not set it", () => {
    const s = settings("model: { provider: simulator, name: echo }\n");
    const error = explainBindError(bindError(errno("EADDRNOTAVAIL"), "127.0.0.1", 0, { name: "gateway" }), s);
    expect((error as Error).message).toMatch(
      /^config error: .*config\.yaml:1: gateway\.host: "127\.0\.0\.1" is not an address of this machine.*\(not set in .*config\.yaml: this is the default\)$/,
    );
  });

  it("leaves an error it does not know as it is", () => {
    const s = settings("");
    const other = errno("EMFILE");
    expect(bindError(other, "127.0.0.1", 1, { name: "gateway" })).toBe(other);
    expect(explainBindError(other, s)).toBe(other);
  });
});
