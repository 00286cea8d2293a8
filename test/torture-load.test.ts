// Torture: a load run. 200 clients each continue their own session through a real gateway against
// the simulator for TENAX_LOAD_SECONDS (default 60): not one error, every reply right, and every
// acknowledged message in the store afterwards, in order. Prints turns/s and p50/p99 latency.
import { readFileSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { openReader } from "../src/store/registry.js";
import { requireBuild } from "./helpers/cli.js";
import { simProfile, startGateway } from "./helpers/gateway.js";
import {
  chatTurn,
  errorChain,
  expectConsistent,
  isFinalReply,
  percentile,
  tortureSeed,
} from "./helpers/torture.js";

beforeAll(() => requireBuild());

const CLIENTS = 200;
const SECONDS = Number(process.env.TENAX_LOAD_SECONDS ?? 60);

interface Acked {
  text: string;
  reply: string;
}

describe("torture: load", () => {
  it(
    `${CLIENTS} concurrent sessions through the gateway for ${SECONDS} s, without an error`,
    async () => {
      // The seed only names the run (the clients' texts); the load itself is not random.
      const seed = tortureSeed("torture-load");
      const { paths, home } = await simProfile("max_turns: 256");
      // Let every client's model call through at once: the provider limit is not under test here.
      const config = readFileSync(paths.config, "utf8");
      writeFileSync(
        paths.config,
        config.replace("type: simulator,", "type: simulator, max_concurrency: 256,"),
      );
      expect(readFileSync(paths.config, "utf8")).toContain("max_concurrency: 256");
      const gateway = await startGateway(home);

      const latencies: number[] = [];
      const errors: string[] = [];
      const sessions = new Map<number, { id: string; acked: Acked[] }>();
      const end = Date.now() + SECONDS * 1000;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          let sessionId: string | null = null;
          const acked: Acked[] = [];
          for (let n = 0; Date.now() < end; n++) {
            const text = `load ${seed} client ${c} turn ${n}`;
            try {
              const answer = await chatTurn(gateway, text, sessionId);
              if (answer.status !== 200 || answer.sessionId === null) {
                errors.push(`client ${c} turn ${n}: ${answer.status} ${answer.reply}`);
                return;
              }
              if (answer.reply !== `echo: ${text}`) {
                errors.push(`client ${c} turn ${n}: wrong reply ${JSON.stringify(answer.reply)}`);
                return;
              }
              if (sessionId !== null && answer.sessionId !== sessionId) {
                errors.push(`client ${c} turn ${n}: session ${answer.sessionId}, not ${sessionId}`);
                return;
              }
              sessionId = answer.sessionId;
              latencies.push(answer.ms);
              acked.push({ text, reply: answer.reply });
            } catch (error) {
              errors.push(`client ${c} turn ${n}: ${errorChain(error)}`);
              return;
            }
          }
          if (sessionId !== null) sessions.set(c, { id: sessionId, acked });
        }),
      );
      const elapsed = (performance.now() - started) / 1000;
      const turns = latencies.length;
      console.log(
        `torture-load: ${CLIENTS} sessions, ${turns} turns in ${elapsed.toFixed(1)} s = ${(turns / elapsed).toFixed(1)} turns/s; latency p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${percentile(latencies, 100).toFixed(1)} ms; errors ${errors.length}`,
      );
      expect(errors.slice(0, 5)).toEqual([]);
      expect(sessions.size).toBe(CLIENTS);
      expect(turns).toBeGreaterThanOrEqual(CLIENTS);

      // A graceful stop, then the store read back: each session holds exactly its acknowledged turns.
      gateway.child.kill("SIGTERM");
      expect(await gateway.exited).toBe(0);
      const reader = openReader(paths);
      try {
        const figures = await expectConsistent(reader);
        expect(figures.sessions).toBe(CLIENTS);
        expect(figures.turns.every((t) => t.status === "completed" && t.interrupt_count === 0)).toBe(true);
        expect(figures.turns).toHaveLength(turns);
        for (const { id, acked } of sessions.values()) {
          const spoken = (await reader.getMessages(id))
            .filter((m) => m.role === "user" || isFinalReply(m))
            .map((m) => m.content);
          expect(spoken).toEqual(acked.flatMap((a) => [a.text, a.reply]));
        }
        console.log(
          `torture-load: store checked: ${figures.sessions} sessions, ${figures.messages} messages, ${figures.turns.length} turns, all completed`,
        );
      } finally {
        reader.close();
      }
    },
    (SECONDS + 90) * 1000,
  );
});
