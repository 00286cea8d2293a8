// A cron engine over a real store and a real agent on the simulator, with an injected clock that a
// test moves with `set`: the setup the engine's tests share.
import { agentCronHost } from "../../src/cron/agent-host.js";
import { CronEngine, type EngineOptions } from "../../src/cron/engine.js";
import { CronJobs } from "../../src/cron/jobs.js";
import { setupAgent } from "./agent.js";

export const T0 = Date.parse("2026-12-01T00:00:30Z");
export const MIN = 60_000;
export const HOUR = 60 * MIN;

export async function cronSetup(extra: Record<string, unknown> = {}) {
  const ctx = await setupAgent(extra);
  let now = T0;
  const clock = () => now;
  const jobs = new CronJobs(ctx.store, { timezone: "UTC", now: clock });
  /** An engine on the test's clock, two runs at once; `options` overrides any of it. */
  const engine = (options: Partial<EngineOptions> = {}) =>
    new CronEngine({
      store: ctx.store,
      host: agentCronHost(ctx.agent, ctx.project),
      maxConcurrent: 2,
      defaultTimeoutS: 60,
      sessionOp: (title) => ctx.agent.newSessionOp({ title, source: "cron" }),
      now: clock,
      ...options,
    });
  return { ...ctx, jobs, engine, set: (t: number) => (now = t) };
}
