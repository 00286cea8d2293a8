// The tools whose state lives in the profile's store and outlives any process: `memory` (notes
// the agent keeps for every future session), `todo` (a session's task list, which survives a
// restart) and `session_search` (full-text search over every past session).
import { z } from "zod";
import { newId } from "../../core/ids.js";
import type { StorePort } from "../../store/port.js";
import { defineTool } from "./define-tool.js";
import { type Tool, ToolError } from "./types.js";

export const MEMORY_KIND = "memory";
export const TODO_KIND = "todo";

interface Note {
  text: string;
  created_at: number;
}

const TODO_STATUSES = ["pending", "in_progress", "done", "cancelled"] as const;

interface TodoItem {
  id: string;
  text: string;
  status: (typeof TODO_STATUSES)[number];
}

const MAX_NOTE_CHARS = 4_000;
const MAX_NOTES = 500;

export function durableTools(store: StorePort, now: () => number = Date.now): Tool[] {
  return [memoryTool(store, now), todoTool(store), sessionSearchTool(store)];
}

function memoryTool(store: StorePort, now: () => number): Tool {
  return defineTool({
    name: "memory",
    description:
      "Durable notes of this profile, kept across sessions and restarts: add a note worth remembering, list the notes, or remove one by id.",
    schema: z.strictObject({
      action: z.enum(["add", "list", "remove"]),
      text: z.string().min(1).max(MAX_NOTE_CHARS).optional().describe("the note, for add"),
      id: z.string().min(1).optional().describe("the note's id, for remove"),
    }),
    readOnly: false,
    async run(args) {
      switch (args.action) {
        case "list":
          return { notes: await notes(store) };
        case "add": {
          if (!args.text) throw new ToolError('memory add: argument "text" is required');
          if ((await notes(store)).length >= MAX_NOTES) {
            throw new ToolError(
              `memory is full (${MAX_NOTES} notes); remove notes that no longer matter first`,
            );
          }
          const id = newId("note_", now());
          await store.putRecord(MEMORY_KIND, id, { text: args.text, created_at: now() } satisfies Note);
          return { added: id };
        }
        case "remove": {
          if (!args.id) throw new ToolError('memory remove: argument "id" is required');
          if ((await store.getRecord(MEMORY_KIND, args.id)) === null) {
            throw new ToolError(
              `memory remove: there is no note "${args.id}"; list the notes to see their ids`,
            );
          }
          await store.putRecord(MEMORY_KIND, args.id, null);
          return { removed: args.id };
        }
        default:
          throw new ToolError("memory: unknown action");
      }
    },
  });
}

async function notes(store: StorePort): Promise<Array<{ id: string } & Note>> {
  return (await store.listRecords<Note>(MEMORY_KIND)).map((r) => ({ id: r.key, ...r.value }));
}

function todoTool(store: StorePort): Tool {
  const item = z.strictObject({
    id: z.string().min(1).optional(),
    text: z.string().min(1).max(1_000),
    status: z.enum(TODO_STATUSES).default("pending"),
  });
  return defineTool({
    name: "todo",
    description:
      "This session's task list, kept in the store so it survives restarts: read it, or write the whole list (items with text and status pending|in_progress|done|cancelled).",
    schema: z.strictObject({
      action: z.enum(["read", "write"]),
      items: z.array(item).max(200).optional().describe("the whole new list, for write"),
    }),
    readOnly: false,
    async run(args, context) {
      if (args.action === "read")
        return { items: (await store.getRecord<TodoItem[]>(TODO_KIND, context.sessionId)) ?? [] };
      if (!args.items) throw new ToolError('todo write: argument "items" (the whole list) is required');
      const items: TodoItem[] = args.items.map((it, i) => ({
        id: it.id ?? String(i + 1),
        text: it.text,
        status: it.status,
      }));
      await store.putRecord(TODO_KIND, context.sessionId, items, { sessionId: context.sessionId });
      const open = items.filter((i) => i.status === "pending" || i.status === "in_progress").length;
      return { items: items.length, open };
    },
  });
}

function sessionSearchTool(store: StorePort): Tool {
  return defineTool({
    name: "session_search",
    description: "Full-text search over every message of every past session of this profile.",
    schema: z.strictObject({
      query: z.string().min(1).max(500),
      limit: z.number().int().min(1).max(50).default(10),
    }),
    readOnly: true,
    async run(args) {
      const found = await store.search(args.query, { limit: args.limit });
      return {
        order: found.order,
        hits: found.hits.map((h) => ({
          session_id: h.session_id,
          seq: h.message.seq,
          role: h.message.role,
          at: h.message.created_at === null ? null : new Date(h.message.created_at).toISOString(),
          snippet: h.snippet,
        })),
        ...(found.pending > 0 ? { not_yet_indexed: found.pending } : {}),
      };
    },
  });
}
