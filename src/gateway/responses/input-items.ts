// GET /v1/responses/ID/input_items: the items a stored response was made from, as OpenAI lists
// them: the chain before it (each earlier response's input and output, oldest first) and its own
// input, each with an id and a status, paged by `limit` (1 to 100, 20 by default), `order` (desc
// by default), `after` and `before` (item ids), in a list object with `first_id`, `last_id` and
// `has_more`. `include` takes OpenAI's values; none adds anything here (image URLs are always
// given, and no stored item holds search results, reasoning or log probabilities).
import { z } from "zod";
import { HttpError } from "../../http/http-error.js";
import type { ResponseView } from "../../store/response-rows.js";
import { chainLinks, type ResponseStore, responseNotFound } from "./chain.js";
import type { InputItem } from "./request.js";
import { type OutputItem, outputTextPart } from "./response-object.js";

export const INCLUDABLE = [
  "file_search_call.results",
  "web_search_call.results",
  "web_search_call.action.sources",
  "message.input_image.image_url",
  "computer_call_output.output.image_url",
  "code_interpreter_call.outputs",
  "reasoning.encrypted_content",
  "message.output_text.logprobs",
] as const;

type Status = "completed";
type InputPart =
  | { type: "input_text"; text: string }
  | {
      type: "input_image";
      image_url: string | null;
      file_id: string | null;
      detail: "auto" | "low" | "high";
    };

/** An item as the list gives it (OpenAI's ResponseItem, for the kinds Tenax stores). */
export type ListedItem =
  | {
      type: "message";
      id: string;
      status: Status;
      role: "user" | "system" | "developer";
      content: InputPart[];
    }
  | OutputItem
  | { type: "function_call_output"; id: string; status: Status; call_id: string; output: unknown };

export interface ItemList {
  object: "list";
  data: ListedItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** One value or many (`include[]=a&include[]=b`, as the openai client sends a list). */
const listOf = <T extends z.ZodType>(item: T) =>
  z.union([item, z.array(item)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

const includable = z.enum(INCLUDABLE, { error: `expected one of ${INCLUDABLE.join(", ")}` });

const querySchema = z.strictObject(
  {
    limit: z.coerce
      .number({ error: "must be a whole number from 1 to 100" })
      .int({ error: "must be a whole number from 1 to 100" })
      .min(1, { error: "must be a whole number from 1 to 100" })
      .max(100, { error: "must be a whole number from 1 to 100" })
      .default(20),
    order: z.enum(["asc", "desc"], { error: "must be asc or desc" }).default("desc"),
    after: z.string().min(1, { error: "must be an item id" }).optional(),
    before: z.string().min(1, { error: "must be an item id" }).optional(),
    include: listOf(includable).optional(),
    "include[]": listOf(includable).optional(),
  },
  { error: "expected the query parameters limit, order, after, before and include" },
);

/** The page of input items of stored response `id` that the query asks for. */
export async function listInputItems(store: ResponseStore, id: string, query: unknown): Promise<ItemList> {
  const q = parseQuery(query);
  const found = await store.getResponse(id);
  if (found === null) throw responseNotFound(id, "", null);
  const links = await chainLinks(store, found);
  const items = links.flatMap((link) => [
    ...link.input.map((item, i) => inputItem(item as InputItem, link, i)),
    ...(link.id === found.id ? [] : (link.output as OutputItem[])),
  ]);
  if (q.order === "desc") items.reverse();
  let from = 0;
  let to = items.length;
  if (q.after !== undefined) from = indexOf(items, q.after, "after") + 1;
  if (q.before !== undefined) to = indexOf(items, q.before, "before");
  const window = items.slice(from, Math.max(from, to));
  const data = window.slice(0, q.limit);
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: window.length > data.length,
  };
}

function parseQuery(query: unknown) {
  const parsed = querySchema.safeParse(query ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue?.code === "unrecognized_keys")
    throw badQuery(
      issue.keys[0] ?? "",
      `unknown query parameter${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}: this list takes limit, order, after, before and include`,
    );
  const name = String(issue?.path[0] ?? "query").replace(/\[\]$/, "");
  throw badQuery(name, `${name}: ${issue?.message ?? "is invalid"}`);
}

function indexOf(items: readonly ListedItem[], id: string, param: string): number {
  const at = items.findIndex((item) => item.id === id);
  if (at < 0) throw badQuery(param, `${param}: no input item ${id} in this response's list`);
  return at;
}

/** A stored input item as listed: an id (made from the response's when the client sent none), a status, parts. */
function inputItem(item: InputItem, link: ResponseView, index: number): ListedItem {
  const made = (prefix: string) => `${prefix}${link.id.replace(/^resp_/, "")}_${index}`;
  const status = "completed" as const;
  switch (item.type) {
    case "function_call":
      return {
        type: "function_call",
        id: item.id ?? made("fc_"),
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
        status,
      };
    case "function_call_output":
      return {
        type: "function_call_output",
        id: item.id ?? made("fco_"),
        call_id: item.call_id,
        output: item.output,
        status,
      };
    default: {
      const id = item.id ?? made("msg_");
      if (item.role === "assistant") {
        const text =
          typeof item.content === "string"
            ? item.content
            : item.content
                .map((p) => (p.type === "refusal" ? p.refusal : "text" in p ? p.text : ""))
                .join("");
        return { type: "message", id, status, role: "assistant", content: [outputTextPart(text)] };
      }
      const content: InputPart[] =
        typeof item.content === "string"
          ? [{ type: "input_text", text: item.content }]
          : item.content.map(
              (p): InputPart =>
                p.type === "input_image"
                  ? {
                      type: "input_image",
                      image_url: p.image_url ?? null,
                      file_id: p.file_id ?? null,
                      detail: p.detail ?? "auto",
                    }
                  : { type: "input_text", text: p.type === "refusal" ? p.refusal : p.text },
            );
      return { type: "message", id, status, role: item.role, content };
    }
  }
}

function badQuery(param: string, message: string): HttpError {
  return new HttpError(400, "invalid_request_error", "invalid_field", message, {}, { error: { param } });
}
