// The three client libraries people point at an OpenAI-compatible endpoint, unchanged: the official
// `openai` client, the Vercel AI SDK (`ai` + `@ai-sdk/openai`, chat completions API) and LangChain
// (`@langchain/openai`), each streamed and not, with their own retries off. Each call's outcome is
// reduced to what a test asserts: did it raise, with what status and code, and what reply it got.
import { createOpenAI } from "@ai-sdk/openai";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, streamText } from "ai";
import OpenAI from "openai";

export type ClientName = "openai" | "ai-sdk" | "langchain";

export interface Outcome {
  client: ClientName;
  stream: boolean;
  raised: boolean;
  /** The HTTP status the library reports for the error, when it reports one. */
  status: number | null;
  /** The error's code (the OpenAI error object's `code`), as the library exposes it. */
  code: string | null;
  message: string;
  /** The reply text the caller got (streamed: every delta). */
  text: string;
  /** Every finish reason the caller saw. */
  finishReasons: string[];
}

export const CLIENTS: readonly ClientName[] = ["openai", "ai-sdk", "langchain"];

/** One call of one client, streamed or not. */
export async function ask(
  client: ClientName,
  stream: boolean,
  url: string,
  apiKey: string,
  prompt: string,
): Promise<Outcome> {
  const base = { client, stream, raised: false, status: null, code: null, message: "", text: "" };
  const finishReasons: string[] = [];
  let text = "";
  try {
    if (client === "openai") {
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
      const messages = [{ role: "user" as const, content: prompt }];
      if (!stream) {
        const reply = await openai.chat.completions.create({ model: "tenax", messages });
        text = reply.choices[0]?.message.content ?? "";
        finishReasons.push(...reply.choices.map((c) => c.finish_reason));
      } else {
        const chunks = await openai.chat.completions.create({ model: "tenax", messages, stream: true });
        for await (const chunk of chunks) {
          text += chunk.choices[0]?.delta.content ?? "";
          for (const choice of chunk.choices)
            if (choice.finish_reason) finishReasons.push(choice.finish_reason);
        }
      }
    } else if (client === "ai-sdk") {
      const model = createOpenAI({ baseURL: `${url}/v1`, apiKey }).chat("tenax");
      if (!stream) {
        const reply = await generateText({ model, prompt, maxRetries: 0 });
        text = reply.text;
        finishReasons.push(reply.finishReason);
      } else {
        // streamText reports a failure as an `error` part (and to onError), not as a throw.
        let failure: unknown = null;
        const result = streamText({
          model,
          prompt,
          maxRetries: 0,
          onError: ({ error }) => {
            failure ??= error;
          },
        });
        for await (const part of result.fullStream) {
          if (part.type === "text-delta") text += part.text;
          if (part.type === "error") failure ??= part.error;
        }
        finishReasons.push(
          await Promise.resolve(result.finishReason).catch((e: unknown) => `(rejected: ${String(e)})`),
        );
        if (failure !== null) throw failure;
      }
    } else {
      const model = new ChatOpenAI({
        model: "tenax",
        apiKey,
        configuration: { baseURL: `${url}/v1` },
        maxRetries: 0,
      });
      if (!stream) {
        const reply = await model.invoke(prompt);
        text = String(reply.content);
        const finish = reply.response_metadata?.finish_reason;
        if (typeof finish === "string") finishReasons.push(finish);
      } else {
        for await (const chunk of await model.stream(prompt)) {
          text += String(chunk.content);
          const finish = chunk.response_metadata?.finish_reason;
          if (typeof finish === "string") finishReasons.push(finish);
        }
      }
    }
    return { ...base, text, finishReasons };
  } catch (error) {
    return { ...base, raised: true, ...described(error), text, finishReasons };
  }
}

/** Every client, streamed and not, one after the other; `before` runs before each call. */
export async function askEvery(
  url: string,
  apiKey: string,
  prompt: string,
  before: () => void = () => {},
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const client of CLIENTS)
    for (const stream of [false, true]) {
      before();
      outcomes.push(await ask(client, stream, url, apiKey, prompt));
    }
  return outcomes;
}

/** Status, code and message wherever each library keeps them (its own error, or the cause it wraps). */
export function described(error: unknown): Pick<Outcome, "status" | "code" | "message"> {
  const layers: Record<string, unknown>[] = [];
  for (
    let e: unknown = error;
    typeof e === "object" && e !== null && layers.length < 4;
    e = (e as { cause?: unknown }).cause
  )
    layers.push(e as Record<string, unknown>);
  const pick = <T>(read: (e: Record<string, unknown>) => unknown, is: (v: unknown) => v is T): T | null => {
    for (const e of layers) {
      const value = read(e);
      if (is(value)) return value;
    }
    return null;
  };
  const isNumber = (v: unknown): v is number => typeof v === "number";
  const isString = (v: unknown): v is string => typeof v === "string" && v !== "";
  const errorOf = (e: Record<string, unknown>) =>
    (e.error ?? (e.data as { error?: unknown } | undefined)?.error ?? e.data) as
      | Record<string, unknown>
      | undefined;
  return {
    status: pick((e) => e.status ?? e.statusCode, isNumber),
    code: pick((e) => errorOf(e)?.code, isString) ?? pick((e) => e.code, isString),
    message: error instanceof Error ? error.message : String(error),
  };
}
