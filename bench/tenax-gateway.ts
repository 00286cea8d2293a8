// A Tenax gateway as the load benches run it: `tenax gateway run` (the built CLI) in a scratch home
// whose only provider is the bench's simulator, its key in the environment, its URL read from its
// "listening" line; and the load target and readiness check that go with it. The gateway suite
// (gateway-peer.ts) and the several-gateways suite (gateways-shared.ts) start theirs the same way.
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadTarget } from "./gateway-load.js";
import { type Child, launch, waitFor } from "./load-run.js";

const TENAX_BIN = fileURLToPath(new URL("../../bin/tenax.js", import.meta.url));

export const JSON_HEADERS = { "content-type": "application/json" };
/** The Tenax gateways' key (given as TENAX_API_KEY), sent as their clients send it. */
const TENAX_KEY = "tnx-bench-gateway-key";
export const TENAX_HEADERS = { ...JSON_HEADERS, authorization: `Bearer ${TENAX_KEY}` };

export interface TenaxOptions {
  synchronous: "full" | "normal";
  /** More keys of the profile's store section, e.g. its engine and URL. */
  store?: string;
  /** The CLI entry to run; another checkout's for tenax_before. */
  bin?: string;
  profileDir?: string;
  /** More node options before the CLI entry (e.g. --import, --cpu-prof-interval). */
  nodeArgs?: string[];
  /** A command that runs node (e.g. strace); the child is then that command's process. */
  wrapper?: string[];
  env?: NodeJS.ProcessEnv;
}

export interface TenaxGateway {
  process: Child;
  url: string;
  home: string;
}

/** A scratch home whose config's only provider is the simulator at `simUrl`. */
export function tenaxHome(workDir: string, simUrl: string, turns: number, options: TenaxOptions): string {
  const home = mkdtempSync(join(workDir, `gateway-peer-${options.synchronous}-`));
  const store = [`synchronous: ${options.synchronous}`, ...(options.store ? [options.store] : [])];
  writeFileSync(
    join(home, "config.yaml"),
    [
      "model: { provider: sim, name: echo }",
      "providers:",
      `  sim: { type: simulator, base_url: "${simUrl}", max_concurrency: ${turns} }`,
      `gateway: { drain_timeout: 1, max_turns: ${turns} }`,
      `store: { ${store.join(", ")} }`,
      "",
    ].join("\n"),
  );
  return home;
}

/** `tenax gateway run` on `home` (made by tenaxHome), once it listens; killed if it never does. */
export async function launchTenax(home: string, options: TenaxOptions): Promise<TenaxGateway> {
  // BENCH_GATEWAY_PROFILE=DIR writes a V8 CPU profile of the Tenax gateway there, for diagnosis.
  const profileArgs = options.profileDir ? ["--cpu-prof", "--cpu-prof-dir", options.profileDir] : [];
  const child = launch(
    [...profileArgs, ...(options.nodeArgs ?? []), options.bin ?? TENAX_BIN, "gateway", "run", "--port", "0"],
    { ...process.env, ...options.env, TENAX_HOME: home, TENAX_PROFILE: "", TENAX_API_KEY: TENAX_KEY },
    options.wrapper,
  );
  try {
    const url = await waitFor("the Tenax gateway", child, (out) => {
      const m = /gateway listening on (http:\/\/\S+)/.exec(out);
      return m?.[1] ?? null;
    });
    return { process: child, url, home };
  } catch (error) {
    child.child.kill("SIGKILL");
    throw error;
  }
}

/** A Tenax gateway on a scratch home of its own. */
export function startTenax(
  workDir: string,
  simUrl: string,
  turns: number,
  options: TenaxOptions,
): Promise<TenaxGateway> {
  return launchTenax(tenaxHome(workDir, simUrl, turns, options), options);
}

/** A load target on a Tenax gateway: its agent (`tenax`) unless another model is named. */
export function tenaxTarget(name: string, url: string, model = "tenax"): LoadTarget {
  return { name, origin: new URL(url).origin, path: "/v1/chat/completions", headers: TENAX_HEADERS, model };
}

/** Resolves once `url` answers a chat request with a 200; throws with the last answer after 30 s. */
export async function answers(url: string, headers: Record<string, string>, model = "echo"): Promise<void> {
  const deadline = performance.now() + 30_000;
  let last = "";
  while (performance.now() < deadline) {
    try {
      const res = await fetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, messages: [{ role: "user", content: "ready?" }] }),
      });
      last = `${res.status} ${await res.text()}`;
      if (res.ok) return;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never answered a chat request: ${last}`);
}
