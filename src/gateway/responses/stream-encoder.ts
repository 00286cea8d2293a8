// The chunks of a chat completions stream as the Responses API's stream events: one output item per
// run of text and per tool call, each opened (`output_item.added`, `content_part.added`), fed
// (`output_text.delta`, `function_call_arguments.delta`) and closed (`*.done`) in order, every
// event numbered by `sequence_number`. The caller ends the stream with `completed` once the
// response is stored, or with `fail`.
import type { ChatChunk, ToolCallDelta } from "./chat-answer.js";
import {
  failedResponse,
  finishedResponse,
  type ItemIds,
  messageItem,
  type OutputFunctionCall,
  type OutputItem,
  type OutputMessage,
  outputTextPart,
  type ResponseMeta,
  type ResponseObject,
  responseShell,
} from "./response-object.js";

/** One Responses stream event: its `type` and fields, `sequence_number` included. */
export type ResponseEvent = { type: string; sequence_number: number } & Record<string, unknown>;

interface OpenText {
  index: number;
  item: OutputMessage;
  text: string;
}

interface OpenCall {
  index: number;
  item: OutputFunctionCall;
  open: boolean;
}

export class ResponseStreamEncoder {
  private sequence = 0;
  private readonly output: OutputItem[] = [];
  private text: OpenText | null = null;
  /** Tool calls by their index in the chat stream. */
  private readonly calls = new Map<number, OpenCall>();
  private finishReason: string | null = null;
  private usage: ChatChunk["usage"] = null;

  constructor(
    private readonly meta: ResponseMeta,
    private readonly ids: ItemIds,
    private readonly emit: (event: ResponseEvent) => void,
  ) {}

  /** `response.created` and `response.in_progress`. */
  start(): void {
    const shell = responseShell(this.meta);
    this.send("response.created", { response: shell });
    this.send("response.in_progress", { response: shell });
  }

  /** One chunk of the chat stream. */
  chunk(chunk: ChatChunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const content = choice.delta?.content;
    if (content) this.textDelta(content);
    for (const call of choice.delta?.tool_calls ?? []) this.callDelta(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  /** Close what is open; the finished response, to store before `completed` tells the client. */
  end(): ResponseObject {
    this.closeAll();
    return finishedResponse(this.meta, this.output, this.finishReason, this.usage);
  }

  /** `response.completed`, or `response.incomplete` when the output limit cut it. */
  completed(response: ResponseObject): void {
    this.send(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response });
  }

  /**
   * The failed response (what was said so far, and the error), and its `response.failed` event. The
   * event also carries the error at its top level, as a failed chat stream's last event does, so
   * OpenAI clients that read only that (the official SDK, LangChain through it) raise on it.
   */
  fail(error: { code: string; message: string; type: string }): ResponseObject {
    const open = this.text;
    if (open !== null) this.output[open.index] = messageItem(open.item.id, open.text, "incomplete");
    const response = failedResponse(this.meta, this.output, { code: error.code, message: error.message });
    this.send("response.failed", { response, error });
    return response;
  }

  /** What was streamed so far (for a response that failed before `end`). */
  get items(): readonly OutputItem[] {
    return this.output;
  }

  private textDelta(delta: string): void {
    if (this.text === null) {
      this.closeCalls();
      const item = messageItem(this.ids("msg_"), "", "in_progress");
      item.content = [];
      const index = this.output.push(item) - 1;
      this.text = { index, item, text: "" };
      this.send("response.output_item.added", { output_index: index, item: { ...item, content: [] } });
      this.send("response.content_part.added", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: outputTextPart(""),
      });
    }
    this.text.text += delta;
    this.send("response.output_text.delta", {
      item_id: this.text.item.id,
      output_index: this.text.index,
      content_index: 0,
      delta,
      logprobs: [],
    });
  }

  private callDelta(delta: ToolCallDelta): void {
    let call = this.calls.get(delta.index);
    if (call === undefined) {
      // Chat streams send parallel calls one after the other: a new index ends the one before.
      this.closeText();
      this.closeCalls();
      const item: OutputFunctionCall = {
        type: "function_call",
        id: this.ids("fc_"),
        call_id: delta.id ?? this.ids("call_"),
        name: delta.function?.name ?? "",
        arguments: "",
        status: "in_progress",
      };
      const index = this.output.push(item) - 1;
      call = { index, item, open: true };
      this.calls.set(delta.index, call);
      this.send("response.output_item.added", { output_index: index, item: { ...item } });
    } else if (delta.function?.name && call.item.name === "") {
      call.item.name = delta.function.name;
    }
    const args = delta.function?.arguments;
    if (!args) return;
    call.item.arguments += args;
    // A late piece of a call already closed still belongs to it, in the final response.
    if (!call.open) {
      this.output[call.index] = { ...call.item, status: "completed" };
      return;
    }
    this.send("response.function_call_arguments.delta", {
      item_id: call.item.id,
      output_index: call.index,
      delta: args,
    });
  }

  private closeText(): void {
    const open = this.text;
    if (open === null) return;
    this.text = null;
    const part = outputTextPart(open.text);
    const at = { item_id: open.item.id, output_index: open.index, content_index: 0 };
    this.send("response.output_text.done", { ...at, text: open.text, logprobs: [] });
    this.send("response.content_part.done", { ...at, part });
    const done = messageItem(open.item.id, open.text, "completed");
    this.output[open.index] = done;
    this.send("response.output_item.done", { output_index: open.index, item: done });
  }

  private closeCalls(): void {
    for (const call of this.calls.values()) {
      if (!call.open) continue;
      call.open = false;
      const done: OutputFunctionCall = { ...call.item, status: "completed" };
      this.output[call.index] = done;
      this.send("response.function_call_arguments.done", {
        item_id: done.id,
        output_index: call.index,
        name: done.name,
        arguments: done.arguments,
      });
      this.send("response.output_item.done", { output_index: call.index, item: done });
    }
  }

  private closeAll(): void {
    this.closeText();
    this.closeCalls();
  }

  private send(type: string, fields: Record<string, unknown>): void {
    this.emit({ type, sequence_number: this.sequence++, ...fields });
  }
}
