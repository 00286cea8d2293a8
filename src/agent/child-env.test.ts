import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { waitUntil } from "../../test/helpers/tool-context.js";
import { profileSecrets } from "../config/profile-secrets.js";
import { configSchema } from "../config/schema.js";
import { childEnvironment } from "./child-env.js";
import { ProcessRegistry } from "./processes.js";

const PROVIDER_KEY = "zq8Hk2pLm4Rt7Vw9xY";
const GATEWAY_KEY = "gw-2b7f0c9e41d8a6";

/** The secrets of a profile whose provider key is ${MAIN_KEY} from .env, run with TENAX_API_KEY set. */
function secrets() {
  const config = configSchema.parse({
    model: { provider: "main", name: "m" },
    providers: { main: { type: "openai", api_keys: [PROVIDER_KEY] } },
    gateway: { api_key: GATEWAY_KEY },
  });
  return profileSecrets({
    config,
    dotenv: { MAIN_KEY: PROVIDER_KEY, HOME: "/home/me", DEPLOY_TOKEN: "short" },
    env: { TENAX_API_KEY: GATEWAY_KEY },
    variables: ["MAIN_KEY", "TENAX_API_KEY"],
  });
}

const base = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/me",
  LANG: "C.UTF-8",
  LC_ALL: "C.UTF-8",
  TENAX_API_KEY: GATEWAY_KEY,
  MAIN_KEY: PROVIDER_KEY,
  DEPLOY_TOKEN: "short",
  COPY_OF_THE_KEY: PROVIDER_KEY,
  EDITOR: "vi",
};

describe("childEnvironment", () => {
  it("drops a variable whose value holds a secret, not only one that is one", () => {
    const env = childEnvironment(
      secrets(),
      {},
      {
        PATH: "/usr/bin:/bin",
        HTTPS_PROXY: `http://me:${PROVIDER_KEY}@proxy.example:3128`,
        AUTH_HEADER: `Bearer ${GATEWAY_KEY}`,
        SOME_KEYS: `one,${PROVIDER_KEY},two`,
        EDITOR: "vi",
      },
    );
    expect(Object.keys(env).sort()).toEqual(["EDITOR", "GIT_PAGER", "GIT_TERMINAL_PROMPT", "PAGER", "PATH"]);
  });

  it("drops Tenax's secrets by name and by value, and keeps the rest", () => {
    const env = childEnvironment(secrets(), {}, base);
    expect(env).toEqual({
      PATH: "/usr/bin:/bin",
      // Named in .env (with this very value), but a command without its home is no use.
      HOME: "/home/me",
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      EDITOR: "vi",
      PAGER: "cat",
      GIT_PAGER: "cat",
      GIT_TERMINAL_PROMPT: "0",
    });
  });

  it("passes on only the names a command needs, and those tools.exec.env adds", () => {
    const unknown = {
      ...base,
      DATABASE_URL: "postgres://app:hunter2@db/app",
      AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI",
      SSH_AUTH_SOCK: "/tmp/ssh-agent.sock",
      NODE_OPTIONS: "--require /tmp/x.js",
      npm_config_registry: "https://registry.example",
    };
    const env = childEnvironment(secrets(), {}, unknown);
    for (const name of [
      "DATABASE_URL",
      "AWS_SECRET_ACCESS_KEY",
      "SSH_AUTH_SOCK",
      "NODE_OPTIONS",
      "npm_config_registry",
    ])
      expect(env[name]).toBeUndefined();
    const opened = childEnvironment(secrets(), {}, unknown, ["DATABASE_URL", "NODE_OPTIONS"]);
    expect(opened.DATABASE_URL).toBe("postgres://app:hunter2@db/app");
    expect(opened.NODE_OPTIONS).toBe("--require /tmp/x.js");
    expect(opened.AWS_SECRET_ACCESS_KEY).toBeUndefined();
  });

  it("never passes one of Tenax's secrets, even when tools.exec.env names it", () => {
    const env = childEnvironment(secrets(), {}, base, ["TENAX_API_KEY", "MAIN_KEY", "COPY_OF_THE_KEY"]);
    expect(env.TENAX_API_KEY).toBeUndefined();
    expect(env.MAIN_KEY).toBeUndefined();
    expect(env.COPY_OF_THE_KEY).toBeUndefined();
  });

  it("keeps what the caller sets on purpose, after the quiet settings", () => {
    const env = childEnvironment(secrets(), { PAGER: "less", TENAX_TASK_ID: "t_1" }, base);
    expect(env.PAGER).toBe("less");
    expect(env.TENAX_TASK_ID).toBe("t_1");
  });
});

const registries: ProcessRegistry[] = [];
afterEach(async () => {
  for (const made of registries.splice(0)) await made.cleanupAll();
});

describe("a tool's child process", () => {
  it("runs `env` without the gateway's key or the provider's, and its output is kept redacted", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { TENAX_API_KEY: GATEWAY_KEY, MAIN_KEY: PROVIDER_KEY, ALIAS: PROVIDER_KEY });
    try {
      const reg = new ProcessRegistry({ secrets: secrets() });
      registries.push(reg);
      const handle = await reg.launch("env", { cwd: tempDir(), taskId: "t" });
      await handle.waitForExit(new AbortController().signal);
      await handle.settle(2_000);
      const { stdout } = handle.output(1_000_000);
      expect(stdout).toContain("PATH=");
      expect(stdout).not.toMatch(/^(TENAX_API_KEY|MAIN_KEY|ALIAS)=/m);
      expect(stdout).not.toContain(GATEWAY_KEY);
      expect(stdout).not.toContain(PROVIDER_KEY);
    } finally {
      for (const name of ["TENAX_API_KEY", "MAIN_KEY", "ALIAS"]) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });

  it("prints a secret in pieces (a byte at a time, and across a pause): only the marker is kept", async () => {
    const reg = new ProcessRegistry({ secrets: secrets() });
    registries.push(reg);
    const half = PROVIDER_KEY.length / 2;
    const command = [
      `printf 'key=%s' '${PROVIDER_KEY.slice(0, half)}'; sleep 0.3; printf '%s\\n' '${PROVIDER_KEY.slice(half)}'`,
      `for c in $(printf '${GATEWAY_KEY}' | fold -w1); do printf '%s' "$c"; sleep 0.01; done; echo`,
    ].join("; ");
    const info = await reg.start(command, { cwd: tempDir(), taskId: "t" });
    let polled = "";
    await waitUntil(
      async () => {
        polled += (await reg.poll(info.id)).stdout;
        return polled.split("\n").length > 2;
      },
      5_000,
      "the output",
    );
    expect(polled).toBe("key=[redacted:providers.main.api_keys[0]]\n[redacted:gateway.api_key]\n");
  });
});
