// What `tenax chat` does with each line, apart from the terminal: a line is a turn, or a slash
// command. /new, /resume and /branch start from clean state (the durable transcript is the only
// state a session has); /context and /usage read the durable transcript and change nothing.
import { resolve } from "node:path";
import type { Agent } from "../../agent/agent.js";
import type { ApprovalDecision } from "../../agent/approvals/approval-records.js";
import {
  buildHistory,
  COMPACTION_KIND,
  type Compaction,
  MARKER_ROLE,
  RESUME_NAME,
} from "../../agent/history.js";
import type { ApprovalRequestedEvent } from "../../agent/tools/types.js";
import { type AgentEvent, CONTINUE_NAME, type TurnResult } from "../../agent/turn.js";
import { type SessionUsage, USAGE_KIND } from "../../agent/usage.js";
import { CheckpointStore } from "../../checkpoints/store.js";
import type { TenaxConfig } from "../../config/schema.js";
import { TenaxError } from "../../core/errors.js";
import type { Target } from "../../llm/route-events.js";
import { estimateTokens } from "../../llm/tokens.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { describeCompression } from "./compress-outcome.js";

/** User-role messages Tenax writes itself (continue and resume notes), never the user's. */
const TENAX_NOTES = new Set([CONTINUE_NAME, RESUME_NAME]);

/** Where the chat's output goes: the reply, the turn's events, and lines for the user. */
export interface ChatOutput {
  /** A piece of the streamed reply. */
  text(delta: string): void;
  /** A turn is about to call `target`. */
  beginTurn(target: Target): void;
  /** An event of the running turn (status, tools). */
  event(event: AgentEvent): void;
  /** The turn ended: end the reply and say how it ended (null: it threw, and the caller says why). */
  endTurn(result: TurnResult | null): void;
  /** A line of information for the user. */
  info(line: string): void;
  error(line: string): void;
}

export type LineOutcome = "continue" | "exit";

/** Who answers the approvals of this chat's turns inline (interactive chat only). */
export interface ChatApprover {
  /** For the record: "tenax chat, pid 123 (alice)". */
  who: string;
  ask(event: ApprovalRequestedEvent, signal: AbortSignal): Promise<ApprovalDecision | null>;
}

export const CHAT_HELP = `Commands:
  /new              start a new session (nothing of the current one carries over)
  /resume ID        continue a stored session (an id or a unique prefix)
  /branch           copy this session into a new one and continue there
  /retry            send your last message again
  /rollback [N]     restore the project to its Nth newest checkpoint (1: the latest)
  /compress         compress this session's context now
  /context          the size of this session's durable transcript
  /model [P/NAME]   the models; with P/NAME this chat's turns start there (/model primary: back)
  /usage            tokens this session has used
  /help             this list
  /exit             leave (Ctrl-C interrupts a turn; twice leaves)`;

export class ChatSession {
  private current: string | null = null;
  private lastTurn: TurnResult | null = null;
  /** The model this chat starts its turns on, when /model chose one other than the primary. */
  private chosen: Target | null = null;

  constructor(
    private readonly agent: Agent,
    private readonly paths: ProfilePaths,
    private readonly config: TenaxConfig,
    private readonly cwd: string,
    private readonly out: ChatOutput,
    /** Without one (one-shot -q), what the exec policy holds back is denied at once. */
    private readonly approver: ChatApprover | null = null,
  ) {}

  get sessionId(): string | null {
    return this.current;
  }

  /** Start on a stored session, or a new one. */
  async open(resume?: string): Promise<string> {
    this.current = resume ? await this.agent.store.resolveSessionId(resume) : await this.agent.newSession();
    this.lastTurn = null;
    return this.current;
  }

  /** Handle one line; turns run under `signal` (Ctrl-C aborts it). */
  async handle(line: string, signal: AbortSignal): Promise<LineOutcome> {
    const text = line.trim();
    if (text === "") return "continue";
    if (!text.startsWith("/")) {
      await this.turn(text, signal);
      return "continue";
    }
    const [command = "", ...rest] = text.split(/\s+/);
    const arg = rest.join(" ");
    try {
      return await this.command(command, arg, signal);
    } catch (error) {
      this.out.error(
        TenaxError.isInstance(error)
          ? `${error.message}${error.hint ? `\n${error.hint}` : ""}`
          : String(error),
      );
      return "continue";
    }
  }

  async turn(text: string, signal: AbortSignal): Promise<TurnResult> {
    const sessionId = this.current ?? (await this.open());
    const router = this.agent.runtime.router;
    this.out.beginTurn(this.chosen ?? router.primary);
    let result: TurnResult;
    try {
      result = await this.agent.turn({
        sessionId,
        text,
        cwd: this.cwd,
        signal,
        onEvent: (e) => {
          if (e.type === "text") this.out.text(e.delta);
          else this.out.event(e);
          if (e.type === "approval_requested") void this.answer(e, signal);
        },
        approvals: this.approver ? { requestedBy: this.approver.who } : null,
        ...(this.chosen ? { route: router.turn(this.chosen) } : {}),
      });
    } catch (error) {
      this.out.endTurn(null);
      throw error;
    }
    this.lastTurn = result;
    this.out.endTurn(result);
    return result;
  }

  /** Ask the user, then decide the approval; a failure to decide is said, and the turn's wait goes on. */
  private async answer(event: ApprovalRequestedEvent, signal: AbortSignal): Promise<void> {
    if (!this.approver) return;
    try {
      const decision = await this.approver.ask(event, signal);
      if (decision === null) return;
      await this.agent.approvals.decide(event.approval_id, decision, this.approver.who);
    } catch (error) {
      this.out.error(`could not answer approval ${event.approval_id}: ${String(error)}`);
    }
  }

  private async command(command: string, arg: string, signal: AbortSignal): Promise<LineOutcome> {
    switch (command) {
      case "/exit":
      case "/quit":
        return "exit";
      case "/help":
        this.out.info(CHAT_HELP);
        return "continue";
      case "/new":
        this.out.info(`new session ${await this.open()}`);
        return "continue";
      case "/resume": {
        if (arg === "") {
          this.out.error("/resume needs a session id (tenax sessions list shows them)");
          return "continue";
        }
        const id = await this.open(arg);
        this.out.info(`resumed session ${id} (${(await this.agent.store.getMessages(id)).length} messages)`);
        return "continue";
      }
      case "/branch":
        await this.branch();
        return "continue";
      case "/retry": {
        const last = await this.lastUserMessage();
        if (last === null) {
          this.out.error("nothing to retry: this session has no message of yours yet");
          return "continue";
        }
        await this.turn(last, signal);
        return "continue";
      }
      case "/rollback":
        await this.rollback(arg);
        return "continue";
      case "/compress": {
        const session = this.current ?? (await this.open());
        const outcome = describeCompression(await this.agent.compress(session, signal));
        for (const line of outcome.lines)
          if (outcome.level === "error") this.out.error(line);
          else this.out.info(line);
        return "continue";
      }
      case "/context":
        await this.context();
        return "continue";
      case "/model":
        this.model(arg);
        return "continue";
      case "/usage":
        await this.usage();
        return "continue";
      default:
        this.out.error(`unknown command ${command}; /help lists the commands`);
        return "continue";
    }
  }

  /** The user's own last message: the notes Tenax adds in the user's role are not it. */
  private async lastUserMessage(): Promise<string | null> {
    if (this.current === null) return null;
    const users = (await this.agent.store.getMessages(this.current)).filter(
      (m) => m.role === "user" && !TENAX_NOTES.has(m.name ?? "") && typeof m.content === "string",
    );
    return users.at(-1)?.content ?? null;
  }

  private async branch(): Promise<void> {
    const from = this.current ?? (await this.open());
    const store = this.agent.store;
    const source = await store.getSession(from);
    const to = await this.agent.newSession({ title: `branch of ${source?.title ?? from}`, parent: from });
    const messages = await store.getMessages(from);
    if (messages.length > 0) {
      await store.write(
        messages.map((m) =>
          store.messageOp({
            session_id: to,
            role: m.role,
            content:
              m.content_kind === "parts" && m.content ? (JSON.parse(m.content) as unknown[]) : m.content,
            tool_calls: m.tool_calls,
            tool_call_id: m.tool_call_id,
            name: m.name,
          }),
        ),
      );
    }
    const compaction = await store.getRecord<Compaction>(COMPACTION_KIND, from);
    if (compaction) await store.putRecord(COMPACTION_KIND, to, compaction, { sessionId: to });
    this.current = to;
    this.lastTurn = null;
    this.out.info(`branched ${from} into ${to} (${messages.length} messages copied); continuing in ${to}`);
  }

  private async rollback(arg: string): Promise<void> {
    const n = arg === "" ? 1 : Number(arg);
    if (!Number.isInteger(n) || n < 1) {
      this.out.error(`/rollback takes a whole number of 1 or more (1: the latest checkpoint), not "${arg}"`);
      return;
    }
    const checkpoints = new CheckpointStore({
      home: this.paths.home,
      maxSnapshots: this.config.checkpoints.max_snapshots,
    });
    const project = resolve(this.cwd);
    const result = await checkpoints.restore(project, String(n));
    this.out.info(
      `restored ${project} to checkpoint ${result.restored.id} (${new Date(result.restored.created_at).toISOString()}); ${result.changes.length} files changed` +
        (result.safety ? `; undo with /rollback 1 (the present was saved as ${result.safety.id})` : ""),
    );
  }

  private async context(): Promise<void> {
    if (this.current === null) {
      this.out.info("no session yet");
      return;
    }
    const store = this.agent.store;
    const transcript = await store.getMessages(this.current);
    const compaction = await store.getRecord<Compaction>(COMPACTION_KIND, this.current);
    const history = buildHistory(transcript, { system: this.agent.system, compaction });
    const tokens = estimateTokens(
      history,
      this.agent.tools.map((t) => t.spec),
    );
    const primary = this.agent.runtime.router.primary;
    const window = this.agent.runtime.router.limits(primary)?.context_window ?? null;
    const markers = transcript.filter((m) => m.role === MARKER_ROLE).length;
    this.out.info(
      [
        `session ${this.current}: ${transcript.length} stored messages (${markers} Tenax notes)`,
        `the next request carries ${history.length} messages, about ${tokens} tokens${
          window
            ? ` of ${primary.provider}/${primary.model}'s ${window} (${Math.round((100 * tokens) / window)}%; compression at ${Math.round(this.config.compression.threshold * 100)}%)`
            : ""
        }`,
        compaction
          ? `compacted: messages ${compaction.head_until_seq + 1} to ${compaction.middle_until_seq} are ${compaction.summary === null ? "dropped (no summary)" : "a summary"}`
          : "not compacted",
      ].join("\n"),
    );
  }

  /** `/model` shows the models; `/model PROVIDER/NAME` starts this chat's turns there; `/model primary` goes back. */
  private model(arg: string): void {
    const router = this.agent.runtime.router;
    if (arg === "primary") {
      this.chosen = null;
      this.out.info(`back on the primary ${router.primary.provider}/${router.primary.model}`);
      return;
    }
    if (arg !== "") {
      const slash = arg.indexOf("/");
      const target = { provider: arg.slice(0, slash), model: arg.slice(slash + 1) };
      const known = router.runtimes().map((r) => r.name);
      if (slash <= 0 || target.model === "" || !known.includes(target.provider)) {
        this.out.error(
          `/model takes PROVIDER/NAME with a configured provider (${known.join(", ")}), or "primary"; not "${arg}"`,
        );
        return;
      }
      this.chosen = target;
      this.out.info(
        `this chat's turns now start on ${arg} (fallback as configured); /model primary goes back`,
      );
      return;
    }
    const p = router.primary;
    const chain = router.fallbackChain.map((t) => `${t.provider}/${t.model}`);
    this.out.info(
      [
        `primary: ${p.provider}/${p.model}${this.agent.runtime.builtIn ? " (the built-in local simulator)" : ""}`,
        ...(this.chosen ? [`this chat starts on: ${this.chosen.provider}/${this.chosen.model}`] : []),
        `fallback: ${chain.length > 0 ? chain.join(" then ") : "none"}`,
        ...(this.lastTurn?.model
          ? [`last reply from: ${this.lastTurn.model.provider}/${this.lastTurn.model.model}`]
          : []),
      ].join("\n"),
    );
  }

  private async usage(): Promise<void> {
    if (this.current === null) {
      this.out.info("no session yet");
      return;
    }
    const usage = (await this.agent.store.getRecord<SessionUsage>(USAGE_KIND, this.current)) ?? {
      input_tokens: 0,
      output_tokens: 0,
      turns: 0,
    };
    const transcript = await this.agent.store.getMessages(this.current);
    const chars = transcript.reduce((n, m) => n + (m.content?.length ?? 0), 0);
    this.out.info(
      `session ${this.current}: ${usage.turns} turns reported ${usage.input_tokens} input and ${usage.output_tokens} output tokens; the transcript holds ${transcript.length} messages, ${chars} characters`,
    );
  }
}
