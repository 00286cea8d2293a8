// `tenax chat`: interactive, with the reply streaming as it comes and a status line for every
// retry, key rotation, fallback and compression; Ctrl-C interrupts a turn, twice leaves. And
// `tenax chat -q PROMPT [--session ID] [--json]` for one turn.
import { userInfo } from "node:os";
import { createInterface } from "node:readline";
import type { Command } from "commander";
import type { McpHub } from "../../agent/mcp/mcp-hub.js";
import { describeProcessReap } from "../../agent/process-reaper.js";
import { openAgent } from "../../agent/setup.js";
import type { ApprovalRequestedEvent } from "../../agent/tools/types.js";
import { loadConfig } from "../../config/load.js";
import { loadProfileSecrets } from "../../config/profile-secrets.js";
import type { ModelRuntime } from "../../llm/runtime.js";
import { askApproval, LineQueue } from "../chat/approval-prompt.js";
import { ChatSession } from "../chat/chat-session.js";
import { CtrlCPresses } from "../chat/ctrl-c.js";
import { ChatView } from "../chat/status-view.js";
import { terminalCaps } from "../chat/terminal-style.js";
import type { Cli } from "../main.js";
import { storeSettings } from "../store-access.js";
import { startCommandTracing } from "../telemetry.js";

interface ChatFlags {
  query?: string;
  session?: string;
  json?: boolean;
  checkpoints?: boolean;
}

export function registerChatCommand(program: Command, cli: Cli): void {
  program
    .command("chat")
    .description("talk with the agent: interactive, or one turn with -q")
    .option("-q, --query <prompt>", "run one turn with this message and exit")
    .option("--session <id>", "continue this session (an id or a unique prefix)")
    .option("--json", "with -q: print one JSON document with session_id and reply")
    .option("--checkpoints", "snapshot projects before the agent changes files, whatever config says")
    .action((flags: ChatFlags) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile({ create: true });
        const loaded = loadConfig(paths);
        const { config, warnings } = loaded;
        for (const w of warnings) out.warn(w);
        const tracing = await startCommandTracing(config, (line) => out.warn(line));
        const opened = await openAgent(paths, config, {
          storeSettings: storeSettings(config),
          secrets: loadProfileSecrets(paths, loaded),
          ...(flags.checkpoints ? { checkpoints: true } : {}),
          audit: { source: "chat", onFailure: (message) => out.warn(message) },
          mcp: true,
        }).catch(async (error: unknown) => {
          await tracing?.shutdown();
          throw error;
        });
        try {
          if (opened.agent.runtime.builtIn) {
            out.warn(
              "no provider is configured, so the built-in local simulator answers (it echoes); set model and providers in config.yaml for a real model",
            );
          }
          for (const line of describeProcessReap(opened.reapedProcesses)) out.warn(line);
          for (const turn of opened.reaped) {
            out.warn(
              `turn ${turn.turn_id} of session ${turn.session_id} was left running by a process that stopped; it is marked interrupted`,
            );
          }
          sayMcpOutages(opened.agent.mcp, (line) => out.warn(line));
          const view = chatView(opened.agent.runtime, flags.json === true);
          if (flags.query !== undefined) {
            // One turn, no one at a prompt: what the exec policy holds back is denied at once.
            const chat = new ChatSession(opened.agent, paths, config, process.cwd(), view);
            await chat.open(flags.session);
            return await oneShot(chat, flags.query, out);
          }
          const lines = new LineQueue();
          const approver = {
            who: `tenax chat, pid ${process.pid} (${userInfo().username})`,
            ask: async (event: ApprovalRequestedEvent, signal: AbortSignal) => {
              // Nothing is redrawn over the answer while it is typed.
              const release = view.holdLive();
              try {
                return await askApproval(event, lines.fresh, (line) => view.info(line), signal);
              } finally {
                release();
              }
            },
          };
          const chat = new ChatSession(opened.agent, paths, config, process.cwd(), view, approver);
          await chat.open(flags.session);
          return await interactive(chat, view, lines);
        } finally {
          await opened.close();
          await tracing?.shutdown();
        }
      }),
    );
}

/**
 * An MCP server that does not start, or is lost, is said once per outage, and its return once: a
 * server failing for an hour is one line, not one per attempt (the audit trail has each).
 */
function sayMcpOutages(hub: McpHub | null, warn: (line: string) => void): void {
  const down = new Set<string>();
  hub?.on((event) => {
    if (event.type === "mcp_restart" && !down.has(event.server)) {
      down.add(event.server);
      const tryIt = hub.states().find((state) => state.server === event.server)?.try;
      warn(tryIt === undefined ? event.message : `${event.message} (${tryIt} shows why)`);
    } else if (event.type === "mcp_ready" && down.delete(event.server)) warn(event.message);
  });
}

async function oneShot(chat: ChatSession, query: string, out: { json: boolean; document(v: unknown): void }) {
  const controller = new AbortController();
  const onSigint = () => controller.abort(new Error("interrupted by Ctrl-C"));
  process.once("SIGINT", onSigint);
  try {
    const result = await chat.turn(query, controller.signal);
    if (out.json) {
      out.document({
        session_id: result.session_id,
        reply: result.reply,
        status: result.status,
        partial: result.partial,
        finish_reason: result.finish_reason,
        turn_id: result.turn_id,
        model: result.model,
        usage: result.usage,
        error: result.error,
      });
    }
    return result.status === "completed" ? 0 : 1;
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** The status view on stderr, the reply on stdout (none with --json: the document is the reply). */
function chatView(runtime: ModelRuntime, json: boolean): ChatView {
  const caps = terminalCaps(process.stderr, process.env);
  return new ChatView(
    {
      write: (t) => process.stderr.write(t),
      reply: (t) => {
        if (!json) process.stdout.write(t);
      },
      caps,
      shared: !json && process.stdout.isTTY === true && process.stderr.isTTY === true,
      columns: () => process.stderr.columns ?? 80,
    },
    {
      window: (target) => runtime.router.limits(target)?.context_window ?? null,
    },
  );
}

async function interactive(chat: ChatSession, view: ChatView, lines: LineQueue): Promise<number> {
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  // Lines go to an approval's question first, else wait their turn (typed ahead during a turn).
  rl.on("line", (line) => lines.push(line));
  rl.on("close", () => lines.close());
  // On a terminal a question's answer is typed after its own prompt, which the line editor keeps
  // (and redraws, on a backspace) until the answer is in; then the chat's "> " is back.
  if (process.stdin.isTTY && process.stdout.isTTY)
    lines.usePrompt((prompt) => {
      rl.setPrompt(prompt ?? "> ");
      if (prompt !== null) rl.prompt();
    });
  process.stderr.write(
    `session ${chat.sessionId} — /help lists the commands, Ctrl-C interrupts, /exit leaves\n`,
  );
  let running: AbortController | null = null;
  const presses = new CtrlCPresses();
  let leaving = false;
  // A running turn: Ctrl-C interrupts it. At the prompt: the first Ctrl-C says how to leave, a
  // second within 2 s leaves (CtrlCPresses). The handler stays to the end, so a late Ctrl-C never
  // kills the process halfway through closing the store.
  const onSigint = () => {
    if (leaving) return;
    const turnRunning = running !== null && !running.signal.aborted;
    switch (presses.press(Date.now(), turnRunning)) {
      case "interrupt":
        running?.abort(new Error("interrupted by Ctrl-C"));
        view.info("(interrupting; Ctrl-C again to leave)");
        break;
      case "leave":
        leaving = true;
        running?.abort(new Error("leaving"));
        rl.close();
        break;
      case "hint":
        process.stderr.write("\n(Ctrl-C again to leave, or /exit)\n");
        break;
    }
  };
  rl.on("SIGINT", onSigint);
  process.on("SIGINT", onSigint);
  try {
    rl.setPrompt("> ");
    rl.prompt();
    for (let line = await lines.next(); line !== null; line = await lines.next()) {
      // The Ctrl-C that interrupted the last turn is no first press of a Ctrl-C after this line.
      presses.lineTaken();
      running = new AbortController();
      const outcome = await chat.handle(line, running.signal);
      running = null;
      if (outcome === "exit" || leaving) break;
      rl.prompt();
    }
  } finally {
    leaving = true;
    rl.close();
  }
  return 0;
}
