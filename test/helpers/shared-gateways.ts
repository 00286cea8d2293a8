// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the config is written with a literal ${VAR} reference on purpose
// Several gateways of one profile on one PostgreSQL database, as separate hosts would run them:
// each its own home (its own pid file, logs and key), one config, one simulator standing in for
// the provider, and the database's URL in each home's .env.
import { afterEach } from "vitest";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import type { ProfilePaths } from "../../src/profile/paths.js";
import { profileWith } from "./temp-home.js";

const sims: Simulator[] = [];

afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

/**
 * `count` homes of one profile on the database at `url`; `extra` is more YAML for its config,
 * `tools` its tools section (commands run without asking by default).
 */
export async function sharedProfiles(
  count: number,
  url: string,
  extra = "",
  tools = "tools: { exec: { mode: full } }",
): Promise<{ sim: Simulator; paths: ProfilePaths[]; homes: string[] }> {
  const sim = await startSimulator();
  sims.push(sim);
  const config = [
    "model: { provider: sim, name: echo }",
    `providers:\n  sim: { type: simulator, base_url: "${sim.url}" }`,
    'store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }',
    tools,
    extra,
  ].join("\n");
  const paths = Array.from({ length: count }, () =>
    profileWith(`${config}\n`, `TENAX_DATABASE_URL=${url}\n`),
  );
  return { sim, paths, homes: paths.map((p) => p.home) };
}
