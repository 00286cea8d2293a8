// `tenax simulator`: the simulator provider as a real HTTP server in the foreground, for other
// processes (the drill, the demo, a gateway under test) to talk to until SIGINT or SIGTERM.
import type { Command } from "commander";
import { UsageError } from "../../core/errors.js";
import { parsePort } from "../../http/listen.js";
import { DEFAULT_SIM_MODELS, type SimModel, startSimulator } from "../../llm/simulator/server.js";
import type { Cli } from "../main.js";

interface SimulatorFlags {
  port: string;
  host: string;
  model?: string[];
}

export function registerSimulatorCommand(program: Command, cli: Cli): void {
  program
    .command("simulator")
    .description("run the OpenAI-compatible simulator provider in the foreground")
    .requiredOption("--port <port>", "port to listen on (0 picks a free one)")
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option(
      "--model <name=window>",
      "a model it serves and its context window in tokens (repeatable; default echo=128000)",
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .action((flags: SimulatorFlags) =>
      cli.run(false, async (out) => {
        const port = parsePort(flags.port);
        const models = flags.model ? parseModels(flags.model) : DEFAULT_SIM_MODELS;
        const sim = await startSimulator({ port, host: flags.host, models });
        out.line(`simulator listening at ${sim.url}`);
        out.line(
          `models: ${Object.entries(models)
            .map(([name, m]) => `${name} (${m.context_window} tokens)`)
            .join(", ")}`,
        );
        out.line(
          `control: POST ${sim.url.replace(/\/v1$/, "")}/__sim/script, GET /__sim/requests, POST /__sim/reset`,
        );
        const signal = await untilSignal();
        await sim.close();
        out.line(`simulator stopped (${signal})`);
        return 0;
      }),
    );
}

function parseModels(values: string[]): Record<string, SimModel> {
  const models: Record<string, SimModel> = {};
  for (const value of values) {
    const match = /^([^=\s]+)=(\d+)$/.exec(value);
    const window = Number(match?.[2]);
    if (!match?.[1] || !Number.isSafeInteger(window) || window < 1) {
      throw new UsageError(`--model takes name=context_window, such as echo=128000, not "${value}"`);
    }
    models[match[1]] = { context_window: window };
  }
  return models;
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve(signal);
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
